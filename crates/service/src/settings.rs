//! Settings read from the environment that every entrypoint shares (`sundial serve` and the four
//! Lambda functions), parsed in one place so both read them the same way.

use std::collections::BTreeMap;

use sundial_core::expand::ENV_PREFIX;

use crate::outbound::AddressPolicy;

/// `SUNDIAL_SERVICES`: `name=url,name=url` → the service map for `service://name/…` URLs. Empty
/// entries are ignored; an entry without `=` is an error naming it.
pub fn parse_services(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut services = BTreeMap::new();
    for entry in text.split(',') {
        if entry.trim().is_empty() {
            continue;
        }
        let (name, url) = entry.split_once('=').ok_or_else(|| {
            format!("SUNDIAL_SERVICES: expected name=http://host:port, got {entry:?}")
        })?;
        services.insert(name.trim().to_string(), url.trim().to_string());
    }
    Ok(services)
}

/// The `SUNDIAL_VAR_*` variables among `vars`, which templates may read.
pub fn template_env(vars: impl Iterator<Item = (String, String)>) -> BTreeMap<String, String> {
    vars.filter(|(name, _)| name.starts_with(ENV_PREFIX))
        .collect()
}

/// `SUNDIAL_OUTBOUND_ALLOW`: hosts, IPs or CIDRs (comma-separated) added to `policy`'s allow list.
pub fn allow_outbound(mut policy: AddressPolicy, allow: Option<&str>) -> AddressPolicy {
    if let Some(allow) = allow {
        policy.allow_hosts.extend(
            allow
                .split(',')
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .map(str::to_string),
        );
    }
    policy
}

/// A boolean switch: `1` or `true` (any case).
pub fn flag(value: Option<&str>) -> bool {
    value.is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_parse_and_name_bad_entries() {
        let map =
            parse_services("main=http://127.0.0.1:9000, oa = http://oa ,").unwrap_or_default();
        assert_eq!(
            map.get("main").map(String::as_str),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(map.get("oa").map(String::as_str), Some("http://oa"));
        let err = parse_services("main").err().unwrap_or_default();
        assert!(err.contains("\"main\""), "{err}");
    }

    #[test]
    fn template_env_keeps_only_the_prefix() {
        let vars =
            [("SUNDIAL_VAR_A", "1"), ("PATH", "/bin")].map(|(k, v)| (k.to_string(), v.to_string()));
        let env = template_env(vars.into_iter());
        assert_eq!(env.len(), 1);
    }

    #[test]
    fn flags_and_allow_lists() {
        assert!(flag(Some("TRUE")) && flag(Some("1")) && !flag(Some("no")) && !flag(None));
        let policy = allow_outbound(AddressPolicy::aws(), Some("10.0.0.0/8, ,api.internal"));
        assert_eq!(policy.allow_hosts, vec!["10.0.0.0/8", "api.internal"]);
    }
}
