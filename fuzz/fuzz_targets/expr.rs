//! The expression parser: `parse_expression` and `parse_string_value` on any text never
//! panic, and every span they give (of a node or of a syntax error) lies inside the text.
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
        }
        Err(e) => check_error(text, &e),
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
