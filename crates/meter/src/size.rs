//! DynamoDB item sizes, as AWS documents them ("Item sizes and formats", Amazon DynamoDB
//! Developer Guide): an item's size is the sum of its attributes' name lengths and value sizes.
//!
//! - String: its UTF-8 bytes. Binary: its raw bytes (the JSON carries them in base64).
//! - Number: 1 byte per two significant digits, plus 1 (leading and trailing zeros trimmed).
//! - Boolean and Null: 1 byte.
//! - List and Map: 3 bytes of overhead plus 1 byte per element, plus the elements (a map's
//!   element is its name and its value).
//! - Sets: the sum of their elements.

use base64::Engine as _;
use serde_json::{Map, Value};

/// An item in DynamoDB's JSON (`{"pk": {"S": "…"}, …}`).
pub type Item = Map<String, Value>;

/// The size of `item` in bytes.
pub fn item_size(item: &Item) -> u64 {
    item.iter()
        .map(|(name, value)| name.len() as u64 + value_size(value))
        .sum()
}

/// The size of the attributes of `item` named in `names` (a projection).
pub fn projected_size<'a>(item: &Item, names: impl IntoIterator<Item = &'a str>) -> u64 {
    names
        .into_iter()
        .filter_map(|name| item.get(name).map(|v| name.len() as u64 + value_size(v)))
        .sum()
}

/// The size of one attribute value in DynamoDB's JSON.
pub fn value_size(value: &Value) -> u64 {
    let Some((kind, inner)) = value.as_object().and_then(|o| o.iter().next()) else {
        return 0;
    };
    match (kind.as_str(), inner) {
        ("S", Value::String(s)) => s.len() as u64,
        ("N", Value::String(n)) => number_size(n),
        ("B", Value::String(b)) => binary_size(b),
        ("BOOL" | "NULL", _) => 1,
        ("SS", Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.len() as u64)
            .sum(),
        ("NS", Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(number_size)
            .sum(),
        ("BS", Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(binary_size)
            .sum(),
        ("L", Value::Array(items)) => 3 + items.iter().map(|v| 1 + value_size(v)).sum::<u64>(),
        ("M", Value::Object(map)) => {
            3 + map
                .iter()
                .map(|(name, v)| 1 + name.len() as u64 + value_size(v))
                .sum::<u64>()
        }
        _ => 0,
    }
}

/// A number's size: 1 byte per two significant digits, plus 1.
pub fn number_size(text: &str) -> u64 {
    let mantissa = text
        .trim_start_matches(['-', '+'])
        .split(['e', 'E'])
        .next()
        .unwrap_or_default();
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let significant = digits.trim_start_matches('0').trim_end_matches('0').len() as u64;
    significant.max(1).div_ceil(2) + 1
}

fn binary_size(base64: &str) -> u64 {
    base64::engine::general_purpose::STANDARD
        .decode(base64)
        .map_or(base64.len() as u64 * 3 / 4, |bytes| bytes.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(value: Value) -> Item {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn strings_count_their_utf8_bytes_and_names_count_too() {
        // "pk" (2) + "job#1" (5); "name" (4) + "Zürich" (7 bytes: ü is two).
        let it = item(json!({"pk": {"S": "job#1"}, "name": {"S": "Zürich"}}));
        assert_eq!(item_size(&it), 2 + 5 + 4 + 7);
    }

    #[test]
    fn numbers_take_a_byte_per_two_significant_digits_plus_one() {
        assert_eq!(number_size("7"), 2);
        assert_eq!(number_size("12345"), 4);
        assert_eq!(number_size("1000"), 2, "trailing zeros trimmed");
        assert_eq!(
            number_size("0.00120"),
            2,
            "leading and trailing zeros trimmed"
        );
        assert_eq!(number_size("-1700000000123"), 8);
    }

    #[test]
    fn lists_and_maps_take_three_bytes_and_one_per_element() {
        assert_eq!(value_size(&json!({"L": []})), 3);
        assert_eq!(value_size(&json!({"M": {}})), 3);
        // 3 + (1 + 1) + (1 + 2): a BOOL and the number 7.
        assert_eq!(value_size(&json!({"L": [{"BOOL": true}, {"N": "7"}]})), 8);
        // 3 + (1 + "a" + 1 + "xy")
        assert_eq!(value_size(&json!({"M": {"a": {"S": "xy"}}})), 3 + 1 + 1 + 2);
    }

    #[test]
    fn binaries_count_their_decoded_bytes_and_sets_their_elements() {
        assert_eq!(value_size(&json!({"B": "AAECAw=="})), 4);
        assert_eq!(value_size(&json!({"SS": ["ab", "c"]})), 3);
        assert_eq!(value_size(&json!({"NS": ["1", "22"]})), 4);
    }

    #[test]
    fn a_projection_counts_only_its_attributes() {
        let it = item(json!({"pk": {"S": "a"}, "sk": {"S": "b"}, "body": {"S": "0123456789"}}));
        assert_eq!(
            projected_size(&it, ["pk", "sk"]),
            6,
            "names count: pk a, sk b"
        );
        assert_eq!(projected_size(&it, ["pk", "missing"]), 3);
    }
}
