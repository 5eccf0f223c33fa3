//! Drafts written to break lwirc: expressions past the language's limits, records that must
//! read back, through the built binary.

use crate::common;

use std::fs;

use common::*;

/// The example draft with `when` of the `write` step set to `expression`.
fn draft_with_when(expression: &str) -> serde_json::Value {
    let mut draft = example_draft();
    draft["steps"][3]["when"] = serde_json::Value::String(format!("${{ {expression} }}"));
    draft
}

/// `input.repo == 'a' || …` with `terms` terms: 3 levels for the first, one more for each
/// further term.
fn or_chain(terms: usize) -> String {
    vec!["input.repo == 'a'"; terms].join(" || ")
}

/// `lwirc validate DRAFT -d <the example definition> EXTRA…` in `dir`.
fn validate(dir: &std::path::Path, draft: &str, extra: &[&str]) -> std::process::Output {
    let definition = example("workflow.json");
    let mut args = vec!["validate", draft, "-d", &definition];
    args.extend_from_slice(extra);
    lwirc(dir, &args)
}

fn findings(out: &std::process::Output) -> Vec<serde_json::Value> {
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    report["findings"].as_array().unwrap().clone()
}

/// Chains without brackets used to overflow the stack (`fatal runtime error: stack
/// overflow`, a signal instead of an exit status) while the expression was typed.
#[test]
fn long_expression_chains_are_findings_not_crashes() {
    let tmp = tempfile::tempdir().unwrap();
    let chains = [
        vec!["input.repo"; 7000].join(" + "),
        vec!["input.repo == 'a'"; 7000].join(" && "),
        "!".repeat(7000) + "true",
        "input".to_owned() + &".repo".repeat(7000),
        "input.repo".to_owned() + &".lower()".repeat(7000),
    ];
    for chain in &chains {
        let draft = write_json(tmp.path(), "draft.json", &draft_with_when(chain));
        let out = validate(tmp.path(), &draft, &["--format", "json"]);
        assert_exit(&out, 1);
        let found = findings(&out);
        let too_complex: Vec<_> = found.iter().filter(|f| f["code"] == "LW212").collect();
        assert_eq!(too_complex.len(), 1, "{found:#?}");
        assert_eq!(too_complex[0]["pointer"], "/steps/3/when");
        // The span is inside the string that holds the expression.
        let bytes = fs::read(&draft).unwrap();
        let start = too_complex[0]["span"]["start"].as_u64().unwrap() as usize;
        let end = too_complex[0]["span"]["end"].as_u64().unwrap() as usize;
        assert!(start < end && end <= bytes.len());
        assert!(!bytes[start..end].contains(&b'"'), "{}", &chain[..30]);
    }
}

/// The same chains in a draft large enough that its expressions are checked on two threads
/// (2 500 steps before the example's; the `write` step is in the part the second thread
/// checks): findings, not a crash of that thread; and the deepest expression allowed is
/// checked there without one.
#[test]
fn long_expression_chains_in_a_split_draft_are_findings_not_crashes() {
    let tmp = tempfile::tempdir().unwrap();
    let pads = 2_500;
    let split_draft = |expression: &str| {
        let mut draft = draft_with_when(expression);
        let first = draft["steps"][0].clone();
        let steps = draft["steps"].as_array_mut().unwrap();
        let mut padded: Vec<serde_json::Value> = (0..pads)
            .map(|i| {
                let mut step = first.clone();
                step["id"] = format!("pad{i}").into();
                step
            })
            .collect();
        padded.append(steps);
        *steps = padded;
        draft
    };
    let at = format!("/steps/{}/when", pads + 3);
    let chains = [
        vec!["input.repo"; 7000].join(" + "),
        vec!["input.repo == 'a'"; 7000].join(" && "),
        "!".repeat(7000) + "true",
        "input".to_owned() + &".repo".repeat(7000),
    ];
    for chain in &chains {
        let draft = write_json(tmp.path(), "draft.json", &split_draft(chain));
        assert!(fs::metadata(&draft).unwrap().len() > 256 * 1024);
        let out = validate(tmp.path(), &draft, &["--format", "json"]);
        assert_exit(&out, 1);
        let found = findings(&out);
        let too_complex: Vec<_> = found.iter().filter(|f| f["code"] == "LW212").collect();
        assert_eq!(too_complex.len(), 1, "{found:#?}");
        assert_eq!(too_complex[0]["pointer"], *at);
    }
    let draft = write_json(tmp.path(), "draft.json", &split_draft(&or_chain(62)));
    let out = validate(tmp.path(), &draft, &["--format", "json"]);
    // Nothing of the expression: the step limit (200 in the example's definition) is over,
    // and the workflow's output reads `write`, which may now be skipped (the scope the
    // second thread left is the one the output is checked in).
    let codes: Vec<_> = findings(&out).iter().map(|f| f["code"].clone()).collect();
    assert_eq!(codes, ["LW210", "LW605"], "{}", stdout(&out));
}

/// An expression at the depth limit is checked, compiled, registered, and its record reads
/// back: `registry show`, `list`, `verify` and `drift` work on it. (A record used to nest
/// the typed tree as deep as the expression, so a chain of ~130 terms registered and then
/// read back as corrupt.)
#[test]
fn the_deepest_expression_allowed_registers_and_reads_back() {
    let tmp = tempfile::tempdir().unwrap();
    let definition = example("workflow.json");
    let draft = write_json(tmp.path(), "draft.json", &draft_with_when(&or_chain(62)));
    let out = lwirc(
        tmp.path(),
        &["register", &draft, "-d", &definition, "--registry", "reg"],
    );
    assert_exit(&out, 0);
    let version = stdout(&out).trim().to_owned();
    for args in [
        vec!["registry", "show", &version, "--registry", "reg"],
        vec!["registry", "list", "--registry", "reg"],
        vec!["registry", "verify", "--registry", "reg"],
        vec!["drift", &version, "-d", &definition, "--registry", "reg"],
    ] {
        let out = lwirc(tmp.path(), &args);
        assert_exit(&out, 0);
    }
    let show = lwirc(
        tmp.path(),
        &["registry", "show", &version, "--registry", "reg"],
    );
    let record: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    let when = record["expressions"]["plan"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["pointer"] == "/steps/3/when")
        .unwrap();
    // 62 comparisons of a member of `input` with a string, and 61 `||`: 4 nodes a term.
    assert_eq!(when["nodes"].as_array().unwrap().len(), 62 * 4 + 61);
    assert_eq!(
        when["nodes"].as_array().unwrap().last().unwrap()["op"],
        "or"
    );
    // One past the limit is refused at validation, and nothing is stored.
    let draft = write_json(tmp.path(), "deeper.json", &draft_with_when(&or_chain(63)));
    let out = lwirc(
        tmp.path(),
        &["register", &draft, "-d", &definition, "--registry", "reg"],
    );
    assert_exit(&out, 1);
    let said = stdout(&out) + &stderr(&out);
    assert!(said.contains("LW212"), "{said}");
    let list = lwirc(
        tmp.path(),
        &["registry", "list", "--registry", "reg", "--format", "json"],
    );
    assert_exit(&list, 0);
    let listed: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
}

/// A record grows linearly with the draft: twice as long an expression, about twice the
/// record. (With the typed tree nested and pretty-printed, each node was indented as deep
/// as it sat, and the record grew with the square of the chain: a 39 KB draft once gave a
/// 136 MB record.)
#[test]
fn records_grow_linearly_with_the_expressions() {
    let tmp = tempfile::tempdir().unwrap();
    let definition = example("workflow.json");
    let mut sizes = Vec::new();
    for terms in [30, 60] {
        let dir = tmp.path().join(format!("t{terms}"));
        fs::create_dir(&dir).unwrap();
        let draft = write_json(&dir, "draft.json", &draft_with_when(&or_chain(terms)));
        let out = lwirc(
            &dir,
            &["register", &draft, "-d", &definition, "--registry", "reg"],
        );
        assert_exit(&out, 0);
        let version = stdout(&out).trim().to_owned();
        let show = lwirc(&dir, &["registry", "show", &version, "--registry", "reg"]);
        assert_exit(&show, 0);
        sizes.push(show.stdout.len() as f64);
    }
    // The rest of the record is the same in both; the expression's part doubles.
    let ratio = sizes[1] / sizes[0];
    assert!(ratio < 2.2, "record sizes {sizes:?}: ratio {ratio:.2}");
}

/// A planner answering a draft with a 7 000-term chain used to kill `compile` (no
/// `session.failed`), and `--resume` replayed the answer and died again. Now the draft gets
/// its finding, the repair loop goes on, and the session ends with a report.
#[test]
fn compile_survives_a_planner_answering_a_huge_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let chain = vec!["input.repo == 'a'"; 7000].join(" && ");
    let answers_dir = answers(tmp.path(), &[draft_answer(&draft_with_when(&chain))]);
    let session = tmp.path().join("session");
    let out = lwirc(
        tmp.path(),
        &[
            "compile",
            &example("workflow.json"),
            "--input",
            &example("input.json"),
            "--planner",
            &scripted_planner(&answers_dir),
            "--registry",
            "reg",
            "--session",
            &session.display().to_string(),
            "--format",
            "json",
        ],
    );
    assert_exit(&out, 1);
    let log = fs::read_to_string(session.join("events.jsonl")).unwrap();
    let events: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        log.contains("LW212"),
        "the validation of the answer names LW212"
    );
    assert_eq!(events.last().unwrap()["event"], "session.failed");
}

/// The LWIR a registry gives back (`registry show --lwir`) is canonical and hashes to its
/// version, also with a number RFC 8785 writes as a long integer: `1e20` is stored as
/// `100000000000000000000`, which lwirc's reader used to refuse (LW005).
#[test]
fn stored_lwir_hashes_to_its_version() {
    let tmp = tempfile::tempdir().unwrap();
    let mut draft = example_draft();
    draft["x-budget"] = serde_json::json!([1e20, 2.5e19, 1e21]);
    let draft = write_json(tmp.path(), "draft.json", &draft);
    let out = lwirc(
        tmp.path(),
        &[
            "register",
            &draft,
            "-d",
            &example("workflow.json"),
            "--registry",
            "reg",
        ],
    );
    assert_exit(&out, 0);
    let version = stdout(&out).trim().to_owned();
    let show = lwirc(
        tmp.path(),
        &["registry", "show", &version, "--lwir", "--registry", "reg"],
    );
    assert_exit(&show, 0);
    assert_stdout_has(&show, "[100000000000000000000,25000000000000000000,1e+21]");
    let hash = lwirc_with_stdin(tmp.path(), &["hash", "-"], &show.stdout);
    assert_exit(&hash, 0);
    assert_eq!(stdout(&hash).trim(), version);
    let canon = lwirc_with_stdin(tmp.path(), &["canon", "-"], &show.stdout);
    assert_exit(&canon, 0);
    assert_eq!(canon.stdout, show.stdout);
}

/// Two places of one finding far apart on one long line (a minified draft with 20 000
/// duplicate keys, each related to the first) made miette panic ("Formatting argument out
/// of range") and drew everything between them, for every finding. Now the far place is
/// named in the help, and the report stays small.
#[test]
fn findings_on_one_long_line_render_without_panicking() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!("{{{}}}", vec![r#""k":1"#; 20_000].join(","));
    let path = tmp.path().join("dups.json");
    fs::write(&path, &text).unwrap();
    let path = path.display().to_string();
    for args in [
        vec!["validate", &path, "--color", "never"],
        vec!["canon", &path],
    ] {
        let out = lwirc(tmp.path(), &args);
        assert_exit(&out, 1);
        let said = stdout(&out) + &stderr(&out);
        assert!(!said.contains("panicked"), "{}", &said[..2000]);
        assert!(
            said.contains("(line 1, column 2)"),
            "the first `k` is named"
        );
        // A few hundred bytes a finding, not the line up to it.
        assert!(said.len() < 20_000 * 1_500, "{} bytes", said.len());
    }
}

/// A message quoting a 200 KB value is cut for people (the JSON report keeps it), and the
/// value's snippet is a window, not the whole value.
#[test]
fn huge_values_are_excerpted_for_people() {
    let tmp = tempfile::tempdir().unwrap();
    let mut draft = example_draft();
    draft["lwir"] = "x".repeat(200_000).into();
    let draft = write_json(tmp.path(), "draft.json", &draft);
    let human = validate(tmp.path(), &draft, &["--color", "never"]);
    assert_exit(&human, 1);
    assert!(
        stdout(&human).len() < 20_000,
        "{} bytes",
        stdout(&human).len()
    );
    assert_stdout_has(&human, "more characters)");
    let json = validate(tmp.path(), &draft, &["--format", "json"]);
    assert!(
        stdout(&json).contains(&"x".repeat(200_000)),
        "the JSON report is exact"
    );
}

/// A workflow name of 70 000 characters (nothing in the language bounds it) made `registry
/// list` panic: the table padded every name to the longest, and formatting refuses a
/// width past 65 535. The table cuts names; the JSON listing keeps them whole.
#[test]
fn registry_list_survives_a_huge_workflow_name() {
    let tmp = tempfile::tempdir().unwrap();
    let name = "a".repeat(70_000);
    let mut draft = example_draft();
    draft["workflow"] = name.clone().into();
    let mut definition = example_definition();
    definition["name"] = name.clone().into();
    let draft = write_json(tmp.path(), "draft.json", &draft);
    let definition = write_json(tmp.path(), "workflow.json", &definition);
    let out = lwirc(
        tmp.path(),
        &["register", &draft, "-d", &definition, "--registry", "reg"],
    );
    assert_exit(&out, 0);
    let list = lwirc(tmp.path(), &["registry", "list", "--registry", "reg"]);
    assert_exit(&list, 0);
    let table = stdout(&list);
    assert!(table.len() < 300, "{} bytes", table.len());
    assert!(table.contains("more characters)"), "{table}");
    let json = lwirc(
        tmp.path(),
        &["registry", "list", "--registry", "reg", "--format", "json"],
    );
    assert_exit(&json, 0);
    let rows: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(rows[0]["workflow"], name.as_str());
}

/// A 300 000-character key, written twice: its findings quote it in the message, the
/// pointer label and the related place; for people each is cut, so the report stays a few
/// kilobytes (it was 600 KB: the pointer label held the whole key).
#[test]
fn a_huge_key_is_cut_everywhere_a_person_reads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let key = "k".repeat(300_000);
    let path = tmp.path().join("draft.json");
    fs::write(&path, format!(r#"{{"{key}": 1, "{key}": 2}}"#)).unwrap();
    let out = lwirc(
        tmp.path(),
        &["validate", &path.display().to_string(), "--color", "never"],
    );
    assert_exit(&out, 1);
    let report = stdout(&out);
    assert!(report.contains("LW002"), "{}", &report[..500]);
    assert!(report.len() < 20_000, "{} bytes", report.len());
}

/// A document past the 4 GiB the reader's 32-bit spans cover is refused before it is read
/// (a sparse file here, so nothing is allocated), with its size and the limit.
#[test]
fn documents_past_four_gib_are_refused_before_reading() {
    let tmp = tempfile::tempdir().unwrap();
    let huge = tmp.path().join("huge.json");
    fs::File::create(&huge)
        .and_then(|f| f.set_len(5 << 30))
        .unwrap();
    let huge = huge.to_str().unwrap();
    for args in [vec!["hash", huge], vec!["validate", huge]] {
        let out = lwirc(tmp.path(), &args);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains("is 5368709120 bytes; lwirc reads documents of up to 4294967295 bytes"),
            "{args:?}: {err}"
        );
    }
}
