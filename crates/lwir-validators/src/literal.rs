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

#[cfg(test)]
mod tests {
    use super::*;

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
