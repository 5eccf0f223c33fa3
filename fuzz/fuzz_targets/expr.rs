//! The expression parser: `parse_expression` and `parse_string_value` on any text never
//! panic, and every span they give (of a node or of a syntax error) lies inside the text.
//! Every expression that parses is also evaluated (with `input` bound to a small document
//! and a small budget): evaluation never panics, its error spans lie inside the text, and a
//! value either has a JSON form or says why not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lwir_spec::expr::{Expr, Part, StringValue, SyntaxError, parse_expression, parse_string_value};

fuzz_target!(init: lwirc_fuzz::init(), |data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check_expr(text, parse_expression(text));
    match parse_string_value(text) {
        Ok(StringValue::Literal(_)) => {}
        Ok(StringValue::Expression(e)) => check_tree(text, &e),
        Ok(StringValue::Template(parts)) => {
            for part in &parts {
                if let Part::Expr(e) = part {
                    check_tree(text, e);
                }
            }
        }
        Err(e) => check_error(text, &e),
    }
});

fn check_expr(text: &str, parsed: Result<Expr, SyntaxError>) {
    match parsed {
        Ok(e) => {
            check_tree(text, &e);
            // The tree serialises (it is what the compiled plan stores).
            let _ = serde_json::to_vec(&e);
            evaluate(text, &e);
        }
        Err(e) => check_error(text, &e),
    }
}

fn evaluate(text: &str, e: &Expr) {
    use lwir_spec::expr::eval::{Bindings, Val, evaluate};
    let input =
        serde_json::json!({ "a": 1, "s": "text", "xs": [1, 2.5, "x", null], "m": { "k": true } });
    let mut bindings = Bindings::new();
    bindings.insert("input".to_owned(), Val::from_json(&input));
    match evaluate(e, &bindings, 10_000) {
        Ok(value) => {
            let _ = value.to_json();
        }
        Err(error) => assert!(
            error.span.start() <= error.span.end() && error.span.end() <= text.len(),
            "evaluation error span {:?} outside text of {} bytes: {}",
            error.span,
            text.len(),
            error.message
        ),
    }
}

fn check_tree(text: &str, e: &Expr) {
    e.walk(&mut |node: &Expr| {
        assert!(
            node.span.start() <= node.span.end() && node.span.end() <= text.len(),
            "node span {:?} outside text of {} bytes",
            node.span,
            text.len()
        );
    });
}

fn check_error(text: &str, e: &SyntaxError) {
    assert!(
        e.span.start() <= e.span.end() && e.span.end() <= text.len(),
        "syntax error span {:?} outside text of {} bytes: {}",
        e.span,
        text.len(),
        e.message
    );
}
