//! `lwirc eval`: evaluate one expression against an input, as a runtime would.

use lwir_render::terminal::{excerpt, sanitize};
use lwir_spec::expr::eval::{self, Bindings, Val};
use lwir_spec::expr::parse_expression;
use lwir_spec::span::Span;

use super::{print, read_json};
use crate::exit;

/// Evaluate an expression of the LWIR language and print its value as JSON.
///
/// The expression is the text inside `${ … }` (the braces may be given too). Its variables
/// are `input`, the JSON of `--input` (`null` without it), and any `--var NAME=FILE`. The
/// semantics are CEL's for the whitelisted subset: integers and doubles are apart (`1 +
/// 1.0` is an error; `7 / 2` is `3`), integer overflow and division by zero are errors,
/// reading a missing field is an error (`has(a.b)` asks first), and `&&`/`||` absorb an
/// error when the other side decides. Work is bounded by `--budget`. `lwirc explain
/// functions` lists the functions.
///
/// Exit status: 0 the value was printed, 1 the expression does not parse or has no value
/// (the reason and where, on standard error), 2 usage error or unreadable file.
///
/// Examples:
///   lwirc eval "1 + 2 * 3"
///   lwirc eval 'input.items.filter(i, i.label == "bug").size()' --input input.json
///   lwirc eval '${ work.fetch.output.count > 0 }' --var work=work.json
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    /// The expression (it may start with `-`: `lwirc eval '-1 * 2'`).
    #[arg(value_name = "EXPR", allow_hyphen_values = true)]
    expression: String,
    /// The value of `input`: a JSON file (`-` for standard input).
    #[arg(long, value_name = "FILE")]
    input: Option<String>,
    /// Another variable: `NAME=FILE`, a JSON file (repeatable).
    #[arg(long = "var", value_name = "NAME=FILE")]
    vars: Vec<String>,
    /// Units of work allowed (nodes evaluated, characters and elements walked): from 1 to
    /// 1000000000.
    #[arg(long, value_name = "UNITS", default_value_t = eval::DEFAULT_BUDGET,
          value_parser = super::ranges::eval_budget)]
    budget: u64,
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    let text = strip_interpolation(&args.expression);
    let mut bindings = Bindings::new();
    let input = match &args.input {
        Some(path) => match read_json(path)? {
            Some(document) => Val::from_json(&document.root().to_json()),
            None => return Ok(exit::FINDINGS),
        },
        None => Val::Null,
    };
    bindings.insert("input".to_owned(), input);
    for var in &args.vars {
        let Some((name, path)) = var.split_once('=') else {
            anyhow::bail!("--var takes NAME=FILE, not `{}`", sanitize(var));
        };
        let Some(document) = read_json(path)? else {
            return Ok(exit::FINDINGS);
        };
        bindings.insert(name.to_owned(), Val::from_json(&document.root().to_json()));
    }
    let expr = match parse_expression(text) {
        Ok(expr) => expr,
        Err(e) => {
            report(text, e.span, &e.message, e.help.as_deref());
            return Ok(exit::FINDINGS);
        }
    };
    let value = match eval::evaluate(&expr, &bindings, args.budget) {
        Ok(value) => value,
        Err(e) => {
            report(text, e.span, &e.message, None);
            return Ok(exit::FINDINGS);
        }
    };
    match value.to_json() {
        Ok(json) => {
            print(&format!("{}\n", serde_json::to_string(&json)?))?;
            Ok(exit::OK)
        }
        Err(why) => {
            report(text, expr.span, &format!("the value {why}"), None);
            Ok(exit::FINDINGS)
        }
    }
}

/// The expression inside `${ … }`, or the text as it is.
fn strip_interpolation(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed
        .strip_prefix("${")
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or(text)
}

/// `error: MESSAGE`, the expression with the span underlined, and help, on standard error.
fn report(text: &str, span: Span, message: &str, help: Option<&str>) {
    eprintln!("error: {}", sanitize(message));
    // One line, cut around the span, with its characters underlined.
    let line = excerpt(text, 200);
    if line.len() == text.len() && !text.contains('\n') {
        let start = text.get(..span.start()).map_or(0, |t| t.chars().count());
        let width = text
            .get(span.range())
            .map_or(1, |t| t.chars().count().max(1));
        eprintln!("  {}", sanitize(text));
        eprintln!("  {}{}", " ".repeat(start), "^".repeat(width));
    } else {
        eprintln!("  at bytes {} of the expression", span);
    }
    if let Some(help) = help {
        eprintln!("help: {}", sanitize(help));
    }
}
