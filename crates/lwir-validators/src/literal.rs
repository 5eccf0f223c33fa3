//! Telling literal values from expressions and templates.

use lwir_spec::document::{Node, Value};

/// Whether `text` interpolates an expression: it contains `${` that is not the `$${` escape.
pub(crate) fn interpolates(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'$' {
            if bytes[i + 1] == b'$' && bytes.get(i + 2) == Some(&b'{') {
                i += 3;
                continue;
            }
            if bytes[i + 1] == b'{' {
                return true;
            }
        }
        i += 1;
    }
    false
}

/// Whether `node` contains no expression or template anywhere inside it.
pub(crate) fn is_literal(node: &Node) -> bool {
    match &node.value {
        Value::String(s) => !interpolates(s),
        Value::Array(items) => items.iter().all(is_literal),
        Value::Object(members) => members.iter().all(|m| is_literal(&m.value)),
        _ => true,
    }
}

/// The value a string literal `node` stands for exactly, when `expected` (a type list as
/// [`crate::expected_types`] writes it: `integer`, `boolean or null`) wants a number or a
/// boolean and does not take strings: `"5"` → `5`, `"true"` → `true`.
///
/// Only the spelling JSON itself would use counts (no sign `+`, no leading zeros, no spaces,
/// no fraction or exponent), and integers only within ±(2^53 − 1): a conversion that could
/// round, or that reads a spelling two ways, is not exact. Anything else is `None`.
pub(crate) fn exact_conversion(node: &Node, expected: &str) -> Option<serde_json::Value> {
    let text = node.as_str()?;
    let wants = |t: &str| expected.split(" or ").any(|e| e == t);
    if wants("string") {
        return None;
    }
    if (wants("integer") || wants("number")) && is_canonical_integer(text) {
        let n: i64 = text.parse().ok()?;
        if n.unsigned_abs() < (1u64 << 53) {
            return Some(serde_json::Value::from(n));
        }
    }
    if wants("boolean") {
        match text {
            "true" => return Some(serde_json::Value::Bool(true)),
            "false" => return Some(serde_json::Value::Bool(false)),
            _ => {}
        }
    }
    None
}

/// `-?(0|[1-9][0-9]*)`, at most 16 digits.
fn is_canonical_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty()
        && digits.len() <= 16
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && text != "-0"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(text: &str) -> Node {
        lwir_spec::document::read(serde_json::to_vec(text).unwrap())
            .document
            .unwrap()
            .root()
            .clone()
    }

    #[test]
    fn only_exact_spellings_convert() {
        let int = |t: &str| exact_conversion(&string(t), "integer");
        assert_eq!(int("5"), Some(serde_json::json!(5)));
        assert_eq!(int("-12"), Some(serde_json::json!(-12)));
        assert_eq!(int("0"), Some(serde_json::json!(0)));
        for not in [
            "05",
            "+5",
            " 5",
            "5.0",
            "1e3",
            "-0",
            "",
            "-",
            "9007199254740992",
            "five",
        ] {
            assert_eq!(int(not), None, "{not:?}");
        }
        assert_eq!(
            exact_conversion(&string("true"), "boolean"),
            Some(serde_json::json!(true))
        );
        assert_eq!(exact_conversion(&string("True"), "boolean"), None);
        assert_eq!(exact_conversion(&string("5"), "integer or string"), None);
    }

    #[test]
    fn escapes_are_not_interpolations() {
        assert!(interpolates("${ input.repo }"));
        assert!(interpolates("issue #${ n }"));
        assert!(!interpolates("costs $5 {approx}"));
        assert!(!interpolates("literal $${ not an expression }"));
        assert!(interpolates("$${ x } and ${ y }"));
        assert!(!interpolates("$"));
    }
}
