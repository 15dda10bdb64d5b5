//! `filepuff doctor`: which servers are installed, their versions, and which language each
//! serves ([`doctor`], one [`ServerReport`] per server).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Backends, find_program, unusable_program};

/// One server as `filepuff doctor` reports it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerReport {
    pub name: String,
    pub command: Vec<String>,
    pub languages: Vec<&'static str>,
    /// Where the program was found on `PATH`, if it was.
    pub path: Option<PathBuf>,
    /// When it was not: a `PATH` entry of its name that cannot run ([`unusable_program`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
    /// What the program printed for its version (first line), if it ran.
    pub version: Option<String>,
    /// Languages for which this is the server filepuff would use.
    pub serves: Vec<&'static str>,
    pub disabled: bool,
    pub install_hint: String,
}

/// Which servers are installed, their versions and what each serves, for `filepuff doctor`.
/// Runs each found program's version command (`gopls version`, `X --version`), at most 10 s each.
pub fn doctor(backends: &Backends) -> Vec<ServerReport> {
    backends
        .server_specs()
        .iter()
        .map(|spec| {
            let path = find_program(&spec.command[0]);
            let unusable = if path.is_none() { unusable_program(&spec.command[0]) } else { None };
            let version = path.as_ref().and_then(|program| program_version(&spec.name, program));
            // A program that is found but cannot report its version (a rustup proxy without the
            // component) would fail to start: it serves nothing.
            let serves = spec
                .languages
                .iter()
                .filter(|_| version.is_some())
                .filter(|l| backends.spec_for(**l).is_ok_and(|(chosen, _)| chosen.name == spec.name))
                .map(|l| l.name())
                .collect();
            ServerReport {
                name: spec.name.clone(),
                command: spec.command.clone(),
                languages: spec.languages.iter().map(|l| l.name()).collect(),
                path,
                unusable,
                version,
                serves,
                disabled: spec.disabled,
                install_hint: spec.install_hint.clone(),
            }
        })
        .collect()
}

fn program_version(name: &str, program: &Path) -> Option<String> {
    let args: &[&str] = if name == "gopls" { &["version"] } else { &["--version"] };
    // The *-langserver programs of basedpyright and pyright only speak LSP; their CLI sibling
    // in the same directory knows its version.
    let sibling = program.with_file_name(name);
    let program =
        if program.file_name().is_some_and(|f| f.to_string_lossy().ends_with("-langserver")) && sibling.is_file() {
            sibling.as_path()
        } else {
            program
        };
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().ok()?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if !child.try_wait().ok()??.success() {
        return None;
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    out.lines().find(|l| !l.trim().is_empty()).map(|l| l.trim().to_owned())
}
