//! The expression parser never panics, and every syntax error has a span inside the text.

use lwir_spec::expr::{parse_expression, parse_string_value};
use proptest::prelude::*;

/// Expression-like text: operators, brackets, names, literals and arbitrary characters.
fn expression_like() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("${".to_owned()),
            Just("$${".to_owned()),
            Just("}".to_owned()),
            Just("(".to_owned()),
            Just(")".to_owned()),
            Just("[".to_owned()),
            Just("]".to_owned()),
            Just("{".to_owned()),
            Just(".".to_owned()),
            Just(",".to_owned()),
            Just("?".to_owned()),
            Just(":".to_owned()),
            Just(" && ".to_owned()),
            Just(" in ".to_owned()),
            Just("'s\\'t'".to_owned()),
            Just("\"\\u00e9\"".to_owned()),
            Just("'\\q'".to_owned()),
            Just("steps.a.output".to_owned()),
            Just("size(x)".to_owned()),
            Just("1.5e3".to_owned()),
            Just("99999999999999999999".to_owned()),
            Just("-".to_owned()),
            Just("!".to_owned()),
            "\\PC{0,3}",
        ],
        0..30,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn never_panics_and_errors_stay_inside(text in expression_like()) {
        if let Err(e) = parse_expression(&text) {
            prop_assert!(e.span.start() <= e.span.end() && e.span.end() <= text.len(), "{e:?} in {text:?}");
            prop_assert!(text.is_char_boundary(e.span.start()) && text.is_char_boundary(e.span.end()));
        }
        if let Err(e) = parse_string_value(&text) {
            prop_assert!(e.span.start() <= e.span.end() && e.span.end() <= text.len(), "{e:?} in {text:?}");
            prop_assert!(text.is_char_boundary(e.span.start()) && text.is_char_boundary(e.span.end()));
        }
    }

    #[test]
    fn arbitrary_unicode_never_panics(text in "\\PC{0,64}") {
        let _ = parse_expression(&text);
        let _ = parse_string_value(&text);
    }
}
