//! The tools the model may call (function calling; the names are a contract): skills,
//! memory, scratch and `validate_draft`, and where the sandbox runs `bash` and `test_code`.
//! Every path is confined to its store: no absolute path, no `..`, no symbolic link on the
//! way; and every file is read as a file a document names
//! ([`lwir_repair::files::open_confined`]): a regular file inside its directory once links
//! are resolved, never waited on. `bash` runs in the sandbox with the scratch, the memory
//! stores and the skills mounted (spec §12.1); `test_code` through the code runner
//! ([`crate::code`]).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use lwir_sandbox::{Job, Mount};
use lwir_validators::pipeline::{self, Definition, Source};
use serde_json::{Value, json};

use crate::code::{CodeBody, CodeRunner};

/// The most bytes of a file a tool reads.
const MAX_READ: u64 = 256 * 1024;

/// The most bytes one `append_memory` or `write_scratch` writes.
const MAX_WRITE: usize = 256 * 1024;

/// The most bytes of one `bash` command (it is passed as one argument, which the kernel
/// bounds at 128 KiB).
const MAX_COMMAND: usize = 64 * 1024;

/// Where `bash` sees the session's scratch: its working directory.
pub const SCRATCH_INSIDE: &str = "/mnt/scratch/own";
/// Where `bash` sees the `workflow` memory store (read-write).
pub const WORKFLOW_MEMORY_INSIDE: &str = "/mnt/memory/workflow";
/// Where `bash` sees the `org` memory store (read-only).
pub const ORG_MEMORY_INSIDE: &str = "/mnt/memory/org";

/// Where the tools work.
#[derive(Clone, Debug)]
pub struct Places {
    /// The skills directory: a skill's body is `<skills_dir>/<name>/SKILL.md`.
    pub skills_dir: PathBuf,
    /// The active skills' names.
    pub skills: BTreeSet<String>,
    /// The `workflow` memory store (read-write): `<memory>/workflow/<workflow name>`.
    pub workflow_memory: PathBuf,
    /// The `org` memory store (read-only): `<memory>/org`.
    pub org_memory: PathBuf,
    /// The session's scratch directory.
    pub scratch: PathBuf,
}

/// The tools, with what they work on.
pub(crate) struct Tools {
    pub(crate) places: Places,
    pub(crate) definition: Arc<Definition>,
    /// The sandbox of `bash` and `test_code`; without one neither is offered.
    pub(crate) code: Option<CodeRunner>,
}

impl Tools {
    /// The tools as offered to the model (`tools` of a chat-completions request): `bash`
    /// and `test_code` only when the sandbox runs (`sandboxed`).
    pub(crate) fn specs(sandboxed: bool) -> Value {
        let function = |name: &str, description: &str, properties: Value, required: &[&str]| {
            json!({ "type": "function", "function": {
                "name": name, "description": description,
                "parameters": { "type": "object", "properties": properties, "required": required,
                                "additionalProperties": false } } })
        };
        let string = |d: &str| json!({ "type": "string", "description": d });
        let mut tools = json!([
            function(
                "read_skill",
                "Read the body of an active skill (its SKILL.md).",
                json!({ "name": string("the skill's name") }),
                &["name"]
            ),
            function(
                "read_memory",
                "Read a file of a memory store: `workflow` (this workflow's, read-write) or `org` (read-only).",
                json!({ "store": { "type": "string", "enum": ["workflow", "org"] }, "path": string("a relative path inside the store") }),
                &["store", "path"]
            ),
            function(
                "append_memory",
                "Append text to a file of the `workflow` memory store (the `org` store is read-only).",
                json!({ "store": { "type": "string", "enum": ["workflow", "org"] }, "path": string("a relative path inside the store"), "text": string("what to append") }),
                &["store", "path", "text"]
            ),
            function(
                "write_scratch",
                "Write a file of this session's scratch space (replacing it).",
                json!({ "path": string("a relative path"), "text": string("the contents") }),
                &["path", "text"]
            ),
            function(
                "read_scratch",
                "Read a file of this session's scratch space.",
                json!({ "path": string("a relative path") }),
                &["path"]
            ),
            function(
                "validate_draft",
                "Validate an LWIR draft against the workflow definition: the findings lwirc would report (its JSON report). Not a planner call and not a repair attempt.",
                json!({ "lwir": { "type": "object", "description": "the whole LWIR document" } }),
                &["lwir"]
            ),
        ]);
        if sandboxed && let Some(list) = tools.as_array_mut() {
            list.push(function(
                "bash",
                "Run `bash -c COMMAND` in a confined sandbox: no network, the system read-only, \
                 an empty environment but PATH, HOME and LANG, at most 30 s, 512 MiB, 64 \
                 processes, 64 MiB per file, and 1 MiB of each output stream kept. The working \
                 directory is /mnt/scratch/own, this session's scratch (read-write, kept for the \
                 whole session: the files of write_scratch and read_scratch); \
                 /mnt/memory/workflow/ is this workflow's memory store (read-write: what you \
                 write there is kept for later sessions, such as lessons-learned.md); \
                 /mnt/memory/org/ is the organisation's (read-only); each active skill is \
                 .agents/skills/<name>/SKILL.md (read-only). Answers a JSON object: \
                 exit_status, signal, limit (null, or the limit that stopped it: time, cpu, \
                 memory, processes, file_size, output), stdout, stderr, stdout_truncated, \
                 stderr_truncated.",
                json!({ "command": string("the command line, run by bash -c") }),
                &["command"],
            ));
            list.push(function(
                "test_code",
                "Run a code.run body exactly as a run of the workflow would (the same sandbox \
                 and limits; python3, node or bash; `input` as JSON on standard input) and check \
                 its standard output, read as one JSON value, against the step's `output` \
                 schema. Answers the sandbox's answer (as bash does) with `result` (the parsed \
                 output, or null), `fits`, and `finding` (null, or the code and message that \
                 would fail the step). Test a body before you put it in a draft.",
                json!({
                    "language": { "type": "string", "enum": ["python", "javascript", "bash"] },
                    "body": string("the body's source text (at most 65536 bytes)"),
                    "input": { "description": "the step's input, any JSON value (default null)" },
                    "output": { "type": "object", "description": "the step's output schema" }
                }),
                &["language", "body", "output"],
            ));
        }
        tools
    }

    /// Runs tool `name` with its JSON `arguments`; the text sent back to the model, or why
    /// the call failed (also sent back: the model may correct itself).
    pub(crate) fn call(&self, name: &str, arguments: &str) -> Result<String, String> {
        let args: Value = serde_json::from_str(arguments)
            .map_err(|e| format!("the arguments are not a JSON object: {e}"))?;
        let text = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("`{key}` (a string) is required"))
        };
        match name {
            "read_skill" => {
                let skill = text("name")?;
                if !self.places.skills.contains(skill) {
                    return Err(format!(
                        "`{skill}` is not an active skill; active skills: {}",
                        self.places
                            .skills
                            .iter()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                // A skill's directory or its SKILL.md may be a link, to another file inside
                // the skills directory only.
                read_limited(&self.places.skills_dir, &Path::new(skill).join("SKILL.md"))
            }
            "read_memory" => {
                let root = self.store(text("store")?)?;
                let path = text("path")?;
                confined(root, path)?;
                read_limited(root, Path::new(path))
            }
            "append_memory" => {
                let store = text("store")?;
                if store != "workflow" {
                    return Err(format!("the `{store}` memory store is read-only"));
                }
                let body = text("text")?;
                if body.len() > MAX_WRITE {
                    return Err(format!("at most {MAX_WRITE} bytes can be appended at once"));
                }
                let path = confined(&self.places.workflow_memory, text("path")?)?;
                append(&path, body).map_err(|e| format!("cannot append to the memory: {e}"))?;
                Ok(format!("appended {} bytes", body.len()))
            }
            "write_scratch" => {
                let body = text("text")?;
                if body.len() > MAX_WRITE {
                    return Err(format!("at most {MAX_WRITE} bytes can be written at once"));
                }
                let path = confined(&self.places.scratch, text("path")?)?;
                if let Some(dir) = path.parent() {
                    lwir_repair::files::create_dirs(dir).map_err(|e| e.to_string())?;
                }
                lwir_repair::files::write_atomically(&path, body.as_bytes())
                    .map_err(|e| format!("cannot write the scratch file: {e}"))?;
                Ok(format!("wrote {} bytes", body.len()))
            }
            "read_scratch" => {
                let path = text("path")?;
                confined(&self.places.scratch, path)?;
                read_limited(&self.places.scratch, Path::new(path))
            }
            "validate_draft" => {
                let lwir = args
                    .get("lwir")
                    .filter(|v| v.is_object())
                    .ok_or("`lwir` (the LWIR document, an object) is required")?;
                let bytes = serde_json::to_vec_pretty(lwir).unwrap_or_default();
                let validation = pipeline::validate_against(
                    Source {
                        name: "draft.json".into(),
                        bytes,
                    },
                    &self.definition,
                );
                Ok(lwir_render::json::render(&validation))
            }
            "bash" if self.code.is_some() => {
                let command = text("command")?;
                self.bash(command)
            }
            "test_code" if self.code.is_some() => {
                let (language, body) = (text("language")?, text("body")?);
                let input = args.get("input").cloned().unwrap_or(Value::Null);
                let output = args
                    .get("output")
                    .ok_or("`output` (the step's output schema) is required")?;
                let runner = self.code.as_ref().ok_or("there is no sandbox")?;
                let body = CodeBody {
                    language,
                    body,
                    input: &input,
                };
                let tested = runner.test(&body, output).map_err(|e| e.to_string())?;
                Ok(tested.to_json().to_string())
            }
            other => Err(format!("there is no tool `{other}`")),
        }
    }

    /// Runs `command` with `bash -c` in the sandbox, with the session's scratch, memory
    /// stores and skills mounted; the answer is the sandbox's JSON.
    fn bash(&self, command: &str) -> Result<String, String> {
        let runner = self.code.as_ref().ok_or("there is no sandbox")?;
        if command.len() > MAX_COMMAND {
            return Err(format!(
                "the command is {} bytes; at most {MAX_COMMAND} (write a longer program to a \
                 file with write_scratch and run that)",
                command.len()
            ));
        }
        let mut job = Job::new(["bash", "-c", command]);
        job.cwd = SCRATCH_INSIDE.into();
        job.mounts = self.mounts()?;
        job.env = crate::code::environment();
        let outcome = runner
            .sandbox()
            .run(&job)
            .map_err(|e| format!("the sandbox could not run the command: {e}"))?;
        serde_json::to_string(&outcome).map_err(|e| e.to_string())
    }

    /// What `bash` sees of the host: the scratch (read-write, its working directory), the
    /// `workflow` memory store (read-write), the `org` store (read-only), each active skill
    /// (read-only). Each host path is made real first (the links of the path the user chose
    /// resolved, as the sandbox mounts no path with a link in it); a skill whose directory
    /// leads out of the skills directory is not mounted, as `read_skill` does not read it.
    fn mounts(&self) -> Result<Vec<Mount>, String> {
        let real = |dir: &Path| -> Result<PathBuf, String> {
            lwir_repair::files::create_dirs(dir)
                .and_then(|()| std::fs::canonicalize(dir))
                .map_err(|e| format!("cannot prepare the sandbox's directories: {e}"))
        };
        let scratch = real(&self.places.scratch)?;
        let mut mounts = vec![
            Mount::read_write(&scratch, SCRATCH_INSIDE),
            Mount::read_write(real(&self.places.workflow_memory)?, WORKFLOW_MEMORY_INSIDE),
            Mount::read_only(real(&self.places.org_memory)?, ORG_MEMORY_INSIDE),
        ];
        let Ok(skills_root) = std::fs::canonicalize(&self.places.skills_dir) else {
            return Ok(mounts);
        };
        for name in &self.places.skills {
            let Ok(dir) = std::fs::canonicalize(skills_root.join(name)) else {
                continue;
            };
            if !dir.starts_with(&skills_root) || !dir.is_dir() {
                continue;
            }
            mount_point(&scratch, name)
                .map_err(|e| format!("cannot prepare the mount of skill `{name}`: {e}"))?;
            mounts.push(Mount::read_only(
                dir,
                Path::new(SCRATCH_INSIDE).join(".agents/skills").join(name),
            ));
        }
        Ok(mounts)
    }

    fn store(&self, name: &str) -> Result<&Path, String> {
        match name {
            "workflow" => Ok(&self.places.workflow_memory),
            "org" => Ok(&self.places.org_memory),
            other => Err(format!(
                "there is no memory store `{other}` (`workflow` or `org`)"
            )),
        }
    }
}

/// `path` inside `root`: relative, without `.`/`..`, and without a symbolic link on the way
/// (a link could lead anywhere).
pub(crate) fn confined(root: &Path, path: &str) -> Result<PathBuf, String> {
    let relative = Path::new(path);
    if path.is_empty() || path.contains('\0') {
        return Err("the path is empty".into());
    }
    let mut out = root.to_path_buf();
    for component in relative.components() {
        match component {
            Component::Normal(part) => {
                out.push(part);
                if std::fs::symlink_metadata(&out).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(format!(
                        "`{path}` goes through a symbolic link, which is not allowed"
                    ));
                }
            }
            _ => {
                return Err(format!(
                    "`{path}` is not a plain relative path inside the store"
                ));
            }
        }
    }
    Ok(out)
}

/// The text of `path` inside `root`, cut after [`MAX_READ`] bytes.
fn read_limited(root: &Path, path: &Path) -> Result<String, String> {
    use lwir_repair::files::ReadError;
    use std::io::Read;
    // The model is not told where the directory is.
    let file = lwir_repair::files::open_confined(root, path).map_err(|e| match e {
        _ if e.is_not_found() => "there is no such file".to_owned(),
        ReadError::Outside(_) => "it leads outside its directory, which is not allowed".to_owned(),
        e => format!("cannot read it: {e}"),
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_READ + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    let cut = bytes.len() as u64 > MAX_READ;
    bytes.truncate(MAX_READ as usize);
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if cut {
        text.push_str("\n[… cut at 256 KiB]");
    }
    Ok(text)
}

/// Appends `text` (and a newline) to the regular file `path`. `bash` can leave anything in
/// the `workflow` store, so the file is opened without following a link and without
/// waiting (a FIFO with no reader would block the session), and must be a regular file.
fn append(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        lwir_repair::files::create_dirs(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("it is not a regular file"));
    }
    let mut line = text.to_owned();
    if !line.ends_with('\n') {
        line.push('\n');
    }
    file.write_all(line.as_bytes())?;
    file.sync_data()
}

/// Makes `.agents/skills/<name>` in `scratch` a plain directory for a skill's mount: an
/// earlier command may have left a link or a file on the way (`ln -s / .agents`), which is
/// removed, so that the mount lands where it should.
fn mount_point(scratch: &Path, name: &str) -> std::io::Result<()> {
    let mut at = scratch.to_path_buf();
    for part in [".agents", "skills", name] {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => std::fs::remove_file(&at)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        std::fs::create_dir(&at)?;
    }
    Ok(())
}
