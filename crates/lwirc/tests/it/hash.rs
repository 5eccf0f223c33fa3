//! `lwirc canon` and `lwirc hash` through the built binary: bytes, standard input, exit
//! codes, and the reader's findings for input that is not I-JSON.

use crate::common;

use common::*;

#[test]
fn canon_prints_the_rfc_8785_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = lwirc_with_stdin(
        tmp.path(),
        &["canon", "-"],
        "{ \"b\": [1.0, 1E2, -0, 1e21], \"a\": \"\\u00e9\\n\", \"\u{fb33}\": null, \"\u{1f600}\": 1 }"
            .as_bytes(),
    );
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        "{\"a\":\"é\\n\",\"b\":[1,100,0,1e+21],\"\u{1f600}\":1,\"\u{fb33}\":null}"
    );
}

#[test]
fn hash_is_the_sha256_of_the_canonical_bytes_and_the_validated_version() {
    let tmp = tempfile::tempdir().unwrap();
    let draft = example("draft.json");
    let canon = lwirc(tmp.path(), &["canon", &draft]);
    let hash = lwirc(tmp.path(), &["hash", &draft]);
    assert_exit(&hash, 0);
    assert_eq!(
        stdout(&hash),
        format!("{}\n", lwir_spec::canon::sha256_of(&canon.stdout))
    );
    let report = lwirc(
        tmp.path(),
        &[
            "validate",
            &draft,
            "-d",
            &example("workflow.json"),
            "--format",
            "json",
        ],
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&report)).unwrap();
    assert_eq!(report["version"], stdout(&hash).trim());
    let piped = lwirc_with_stdin(tmp.path(), &["hash", "-"], &std::fs::read(&draft).unwrap());
    assert_eq!(piped.stdout, hash.stdout);
}

#[test]
fn input_that_is_not_i_json_is_reported_on_standard_error() {
    let tmp = tempfile::tempdir().unwrap();
    for command in ["canon", "hash"] {
        let out = lwirc_with_stdin(
            tmp.path(),
            &[command, "-"],
            br#"{"n": 9007199254740993, "s": "\ud800"}"#,
        );
        assert_exit(&out, 1);
        assert!(out.stdout.is_empty(), "nothing canonicalised");
        let text = stderr(&out);
        assert!(text.contains("LW005/integer-out-of-range"), "{text}");
        assert!(text.contains("LW003/lone-surrogate"), "{text}");
    }
    assert_exit(&lwirc(tmp.path(), &["hash", "no/such/file.json"]), 2);
}
