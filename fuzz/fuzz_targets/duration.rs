//! Durations as users write them (Go style `1d2h0m2s`, `1.5h`, `5400s`; ISO 8601 `PT2H30M`,
//! `P1W`), through `Duration::parse`: no panic, never past the 100-year maximum, and whatever
//! parses prints (`Display`) to a text that parses back to the same duration.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sundial_core::duration::Duration;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(d) = Duration::parse(text) else {
        return;
    };
    assert!(
        d <= Duration::MAX,
        "{text:?} parsed to {d}, past the maximum"
    );
    let shown = d.to_string();
    assert_eq!(
        Duration::parse(&shown),
        Ok(d),
        "{text:?} parsed to {} ms, but its Display {shown:?} does not parse back",
        d.as_millis()
    );
    assert_eq!(
        text.parse::<Duration>(),
        Ok(d),
        "FromStr disagrees on {text:?}"
    );
    assert_eq!(Duration::from_millis(d.as_millis()), d);
    assert_eq!(d.as_secs(), d.as_millis() / 1000);
    if d.is_whole_seconds() {
        assert_eq!(Duration::checked_from_secs(d.as_secs()), Ok(d));
    }
});
