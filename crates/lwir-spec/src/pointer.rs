//! RFC 6901 JSON Pointers: building them from path segments and splitting them back.

use std::fmt::Write as _;

/// Appends the reference token `token` to `pointer`, escaping `~` as `~0` and `/` as `~1`.
pub fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    // Nearly every token (a field name, an id) has nothing to escape: copied at once.
    if !token.contains(['~', '/']) {
        pointer.push_str(token);
        return;
    }
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// Appends an array index to `pointer`.
pub(crate) fn push_index(pointer: &mut String, index: usize) {
    // Writing to a String cannot fail.
    let _ = write!(pointer, "/{index}");
}

/// `pointer` with `token` appended, as a new string.
pub fn join(pointer: &str, token: &str) -> String {
    let mut out = String::with_capacity(pointer.len() + token.len() + 1);
    out.push_str(pointer);
    push_token(&mut out, token);
    out
}

/// `pointer` with array index `index` appended, as a new string.
pub fn join_index(pointer: &str, index: usize) -> String {
    let mut out = String::with_capacity(pointer.len() + 8);
    out.push_str(pointer);
    push_index(&mut out, index);
    out
}

/// An RFC 6901 array index: digits without leading zeros (`0`, `12`; not `01`, `-`, `+1`).
pub fn array_index(token: &str) -> Option<usize> {
    if token.is_empty() || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| token.parse().ok())?
}

/// The unescaped reference tokens of `pointer`, or `None` when it is not a valid pointer
/// (non-empty and not starting with `/`, or with a `~` not followed by `0` or `1`).
pub fn tokens(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    rest.split('/').map(unescape).collect()
}

fn unescape(token: &str) -> Option<String> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// A path being walked, kept as segments so that a pointer string is only built when a
/// finding needs one.
#[derive(Clone, Debug, Default)]
pub(crate) struct PathStack {
    segments: Vec<Segment>,
}

#[derive(Clone, Debug)]
enum Segment {
    Key(crate::document::Str),
    Index(usize),
}

impl PathStack {
    /// Enters member `key`.
    pub(crate) fn push_key(&mut self, key: crate::document::Str) {
        self.segments.push(Segment::Key(key));
    }

    /// Enters array element `index`.
    pub(crate) fn push_index(&mut self, index: usize) {
        self.segments.push(Segment::Index(index));
    }

    /// Leaves the innermost segment, giving back its key when it was a member.
    pub(crate) fn pop(&mut self) -> Option<crate::document::Str> {
        match self.segments.pop()? {
            Segment::Key(k) => Some(k),
            Segment::Index(_) => None,
        }
    }

    /// The key, when the walk is in one member of the root object and no deeper.
    pub(crate) fn only_key(&self) -> Option<&str> {
        match self.segments.as_slice() {
            [Segment::Key(k)] => Some(k),
            _ => None,
        }
    }

    /// The pointer to where the walk is now.
    pub(crate) fn pointer(&self) -> String {
        let mut out = String::new();
        for s in &self.segments {
            match s {
                Segment::Key(k) => push_token(&mut out, k),
                Segment::Index(i) => push_index(&mut out, *i),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_unescapes_tokens() {
        let p = join(&join_index("", 3), "a/b~c");
        assert_eq!(p, "/3/a~1b~0c");
        assert_eq!(tokens(&p).unwrap(), vec!["3", "a/b~c"]);
        assert_eq!(tokens("").unwrap(), Vec::<String>::new());
        assert_eq!(tokens("/").unwrap(), vec![""]);
        assert!(tokens("a").is_none());
        assert!(tokens("/~2").is_none());
    }
}
