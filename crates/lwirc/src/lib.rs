//! The `lwirc` command line: parses arguments, calls the library, maps outcomes to exit
//! codes. One file per subcommand under `commands/`. A library so that the command runs in
//! another process's code too ([`main_with`]: the Python package's `lwirc` command);
//! `src/main.rs` calls it.

use std::ffi::OsString;

use clap::{Parser, Subcommand};

mod commands;

/// lwirc — compile LWIR workflow drafts into validated, pinned workflow versions.
///
/// A planner (any model) drafts an LWIR document; lwirc decides whether it may ever run.
/// Start with `lwirc validate draft.json -d workflow.json`; `lwirc explain CODE` tells what
/// a finding means.
#[derive(Parser)]
#[command(
    name = "lwirc",
    version = VERSION,
    about,
    long_about,
    max_term_width = 100
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Validate(commands::validate::Args),
    Canon(commands::canon::Args),
    Hash(commands::hash::Args),
    Register(commands::register::Args),
    Fix(commands::fix::Args),
    Repair(commands::repair::Args),
    Compile(commands::compile::Args),
    Registry(commands::registry::Args),
    Drift(commands::drift::Args),
    Manifest(commands::manifest::Args),
    Explain(commands::explain::Args),
    Lsp(commands::lsp::Args),
    Eval(commands::eval::Args),
    Goal(commands::goal::Args),
    Goals(commands::goals::Args),
    Sandbox(commands::sandbox::Args),
    TestCode(commands::test_code::Args),
    Run(commands::run::Args),
    Runs(commands::runs::Args),
    Runner(commands::runner::Args),
    Bindings(commands::bindings::Args),
    Tools(commands::tools::Args),
}

/// The version and the commit it was built from (`lwirc --version`): `0.1.0 (commit
/// abc123def456)`; the version alone when built outside a git checkout (build.rs).
const VERSION: &str = env!("LWIRC_VERSION_LINE");

/// Exit codes shared by every subcommand.
pub(crate) mod exit {
    /// Success: no errors.
    pub(crate) const OK: u8 = 0;
    /// The input has errors (findings of severity error), is not I-JSON, or the registry
    /// refused or found a problem.
    pub(crate) const FINDINGS: u8 = 1;
    /// Usage error or unreadable file.
    pub(crate) const USAGE: u8 = 2;
    /// Something a registered version or a planner session depends on changed (or a run
    /// paused for it).
    pub(crate) const DRIFT: u8 = 3;
}

/// Runs the command line on `args` (the program's name first, as in [`std::env::args_os`])
/// and returns its exit status.
pub fn main_with<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // Secrets in the environment, which a planner command or runner inherits and may echo:
    // redacted from everything lwirc prints, logs and stores.
    let env = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    if let Some(key) = env("OPENAI_API_KEY") {
        lwir_spec::redact::register_token(&key);
    }
    if let Some(password) = env("LWIR_REGISTRY_PASSWORD") {
        let user = env("LWIR_REGISTRY_USER").unwrap_or_default();
        lwir_spec::redact::register_credentials(&user, &password);
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let tip = tip_for(&e, &args);
            let _ = e.print();
            if let Some(tip) = tip {
                eprintln!("\n{tip}");
            }
            return if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
        }
    };
    let result = match cli.command {
        Command::Validate(args) => commands::validate::run(args),
        Command::Canon(args) => commands::canon::run(args),
        Command::Hash(args) => commands::hash::run(args),
        Command::Register(args) => commands::register::run(args),
        Command::Fix(args) => commands::fix::run(args),
        Command::Repair(args) => commands::repair::run(args),
        Command::Compile(args) => commands::compile::run(args),
        Command::Registry(args) => commands::registry::run(args),
        Command::Drift(args) => commands::drift::run(args),
        Command::Manifest(args) => commands::manifest::run(args),
        Command::Explain(args) => commands::explain::run(args),
        Command::Lsp(args) => commands::lsp::run(args),
        Command::Eval(args) => commands::eval::run(args),
        Command::Goal(args) => commands::goal::run(args),
        Command::Goals(args) => commands::goals::run(args),
        Command::Sandbox(args) => commands::sandbox::run(args),
        Command::TestCode(args) => commands::test_code::run(args),
        Command::Run(args) => commands::run::run(args),
        Command::Runs(args) => commands::runs::run(args),
        Command::Runner(args) => commands::runner::run(args),
        Command::Bindings(args) => commands::bindings::run(args),
        Command::Tools(args) => commands::tools::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            let error = format!("{error:#}");
            let error = lwir_spec::redact::redact(&error);
            eprintln!("lwirc: {}", lwir_render::terminal::sanitize(&error));
            exit::USAGE
        }
    }
}

/// A tip for a subcommand given to the wrong parent (`lwirc goal copy`, `lwirc goals
/// list`): the command that has it.
fn tip_for(e: &clap::Error, args: &[OsString]) -> Option<String> {
    use clap::CommandFactory;
    use clap::error::{ContextKind, ContextValue};
    if e.kind() != clap::error::ErrorKind::InvalidSubcommand {
        return None;
    }
    let Some(ContextValue::String(wrong)) = e.get(ContextKind::InvalidSubcommand) else {
        return None;
    };
    let args: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let parent = args.iter().find(|a| !a.starts_with('-'))?;
    let cli = Cli::command();
    let owners: Vec<&str> = cli
        .get_subcommands()
        .filter(|c| c.get_name() != parent && c.get_subcommands().any(|s| s.get_name() == wrong))
        .map(clap::Command::get_name)
        .collect();
    // `goal` and `goals` first: the commands whose names are one another's.
    let near = |name: &&&str| name.starts_with(parent.as_str()) || parent.starts_with(**name);
    let owner = owners.iter().find(near).or(owners.first())?;
    let rest: Vec<&str> = args
        .iter()
        .skip_while(|a| *a != wrong)
        .map(String::as_str)
        .collect();
    Some(format!(
        "tip: `{wrong}` is a command of `lwirc {owner}`, not of `lwirc {parent}`: lwirc {owner} {}",
        rest.join(" ")
    ))
}
