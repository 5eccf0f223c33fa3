//! How a type is written: in full (`Display`), and summarized to a bound for a finding's
//! message ([`super::Ty::summary`]), with or without its constraints.

use std::fmt;

use serde_json::Value as Json;

use super::*;

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Render::FULL.write(self, 0, f)
    }
}

/// At most this many characters of a type are shown in a finding message
/// ([`Ty::summary`]); past it, nested parts are elided.
pub const MAX_SUMMARY_CHARS: usize = 200;

/// How a type is written: how deep, how many members, whether with constraints.
#[derive(Clone, Copy)]
pub(super) struct Render {
    /// Objects, lists and tuples nested deeper than this show as `object{…}`, `list<…>`,
    /// `[…]`.
    depth: usize,
    /// Members, elements and properties shown before `…`.
    shown: usize,
    /// Whether bounds, lengths, patterns and counts are written: `string(minLength: 3)`.
    constraints: bool,
}

impl Render {
    /// What [`Ty::display`] writes: every level, eight members of each.
    const FULL: Render = Render {
        depth: usize::MAX,
        shown: 8,
        constraints: false,
    };

    fn write(self, ty: &Ty, level: usize, f: &mut dyn fmt::Write) -> fmt::Result {
        let deeper = level >= self.depth;
        match ty {
            Ty::Any => f.write_str("any"),
            Ty::Never => f.write_str("never"),
            Ty::Null => f.write_str("null"),
            Ty::Bool => f.write_str("boolean"),
            Ty::Int(r) => {
                f.write_str("integer")?;
                self.range(r, f)
            }
            Ty::Number(r) => {
                f.write_str("number")?;
                self.range(r, f)
            }
            Ty::String(s) => {
                f.write_str("string")?;
                let mut c = Vec::new();
                if s.min_len > 0 {
                    c.push(format!("minLength: {}", s.min_len));
                }
                if let Some(max) = s.max_len {
                    c.push(format!("maxLength: {max}"));
                }
                if let Some(p) = &s.pattern {
                    c.push(format!("pattern: {}", short(&Json::String(p.clone()), 40)));
                }
                self.constraints(&c, f)
            }
            Ty::Opaque(_) => f.write_str("opaque"),
            Ty::Literal(v) => f.write_str(&short(v, 40)),
            Ty::List(l) if l.prefix.is_empty() => {
                if deeper && !is_leaf(&l.items) {
                    f.write_str("list<…>")?;
                } else {
                    f.write_str("list<")?;
                    self.write(&l.items, level + 1, f)?;
                    f.write_str(">")?;
                }
                self.counts(l, f)
            }
            Ty::List(l) => {
                if deeper {
                    f.write_str("[…]")?;
                    return self.counts(l, f);
                }
                f.write_str("[")?;
                for (i, t) in l.prefix.iter().take(self.shown).enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    self.write(t, level + 1, f)?;
                }
                if l.prefix.len() > self.shown {
                    f.write_str(", …")?;
                }
                if l.items != Ty::Never {
                    f.write_str(", ...")?;
                    self.write(&l.items, level + 1, f)?;
                }
                f.write_str("]")?;
                self.counts(l, f)
            }
            Ty::Object(o) => {
                let typed_rest = !matches!(o.rest, Ty::Any | Ty::Never);
                if o.properties.is_empty() && !typed_rest {
                    f.write_str("object")?;
                } else if deeper {
                    f.write_str("object{…}")?;
                } else {
                    f.write_str("object{")?;
                    for (i, (name, p)) in o.properties.iter().take(self.shown).enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        let mark = if p.required { "" } else { "?" };
                        write!(f, "{name}{mark}: ")?;
                        self.write(&p.ty, level + 1, f)?;
                    }
                    if o.properties.len() > self.shown {
                        f.write_str(", …")?;
                    }
                    if typed_rest {
                        let sep = if o.properties.is_empty() { "" } else { ", " };
                        write!(f, "{sep}*: ")?;
                        self.write(&o.rest, level + 1, f)?;
                    }
                    f.write_str("}")?;
                }
                let mut c = Vec::new();
                if o.min_properties > 0 {
                    c.push(format!("minProperties: {}", o.min_properties));
                }
                if let Some(max) = o.max_properties {
                    c.push(format!("maxProperties: {max}"));
                }
                self.constraints(&c, f)
            }
            Ty::Union(members) => {
                for (i, m) in members.iter().take(self.shown).enumerate() {
                    if i > 0 {
                        f.write_str(" | ")?;
                    }
                    self.write(m, level, f)?;
                }
                if members.len() > self.shown {
                    write!(f, " | … ({} more)", members.len() - self.shown)?;
                }
                Ok(())
            }
        }
    }

    fn range(self, r: &Range, f: &mut dyn fmt::Write) -> fmt::Result {
        let mut c = Vec::new();
        for (b, inclusive, exclusive) in [
            (r.min, "minimum", "exclusiveMinimum"),
            (r.max, "maximum", "exclusiveMaximum"),
        ] {
            if let Some(b) = b {
                let keyword = if b.exclusive { exclusive } else { inclusive };
                c.push(format!("{keyword}: {}", show_number(b.value)));
            }
        }
        self.constraints(&c, f)
    }

    fn counts(self, l: &ListTy, f: &mut dyn fmt::Write) -> fmt::Result {
        let mut c = Vec::new();
        if l.min_items > 0 {
            c.push(format!("minItems: {}", l.min_items));
        }
        if let Some(max) = l.max_items {
            c.push(format!("maxItems: {max}"));
        }
        if l.unique {
            c.push("uniqueItems: true".to_owned());
        }
        self.constraints(&c, f)
    }

    fn constraints(self, c: &[String], f: &mut dyn fmt::Write) -> fmt::Result {
        if self.constraints && !c.is_empty() {
            write!(f, "({})", c.join(", "))?;
        }
        Ok(())
    }
}

/// Whether a type shows without nesting (an elided `list<…>` would hide nothing).
fn is_leaf(ty: &Ty) -> bool {
    match ty {
        Ty::List(_) => false,
        Ty::Object(o) => o.properties.is_empty() && matches!(o.rest, Ty::Any | Ty::Never),
        Ty::Union(ms) => ms.iter().all(is_leaf),
        _ => true,
    }
}

/// A JSON value, compact, in at most `max` characters (cut with `…`): how messages show a
/// value.
pub fn short(v: &Json, max: usize) -> String {
    let text = v.to_string();
    if text.chars().count() > max {
        let cut: String = text.chars().take(max - 1).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// A bound as written in a schema: `3`, `0.5`.
fn show_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// A writer that stops (with an error) once it holds more than `cap` characters, so a
/// summary of a huge type costs no more than its cap.
struct Capped {
    text: String,
    chars: usize,
    cap: usize,
}

impl fmt::Write for Capped {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.chars += s.chars().count();
        self.text.push_str(s);
        if self.chars > self.cap {
            Err(fmt::Error)
        } else {
            Ok(())
        }
    }
}

/// `ty` written for a message in at most `cap` characters: the fullest of a few
/// renderings, each eliding more (shallower, fewer members), that fits; the last resort is
/// cut with `…`.
pub(super) fn summarize(ty: &Ty, constraints: bool, cap: usize) -> String {
    let mut last = String::new();
    for (depth, shown) in [(4, 8), (3, 6), (2, 4), (1, 3), (0, 2)] {
        let render = Render {
            depth,
            shown,
            constraints,
        };
        let mut out = Capped {
            text: String::new(),
            chars: 0,
            cap,
        };
        if render.write(ty, 0, &mut out).is_ok() {
            return out.text;
        }
        last = out.text;
    }
    let cut: String = last.chars().take(cap.saturating_sub(1)).collect();
    format!("{cut}…")
}
