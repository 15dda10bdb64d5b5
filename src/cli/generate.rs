//! Shell completions and the man page, generated from the clap definition of [`super::Cli`] so
//! they cannot drift from the flags (`filepuff completions bash|zsh|fish|elvish|powershell`,
//! `filepuff man`). Neither needs a workspace.

use std::io::Write;

use clap::CommandFactory;
use clap_complete::Shell;

/// Writes the completion script for `shell` (clap_complete's generator for that shell) to `out`.
///
/// The script completes subcommands and flags of the `filepuff` binary as named on the PATH.
///
/// # Errors
/// Only the writer's: a closed pipe or a full disk.
pub fn write_completions(shell: Shell, out: &mut dyn Write) -> std::io::Result<()> {
    let mut command = super::Cli::command();
    let mut buffer = Vec::new();
    clap_complete::generate(shell, &mut command, "filepuff", &mut buffer);
    out.write_all(&buffer)
}

/// Writes the man page `filepuff(1)` in roff (clap_mangen) to `out`: the top-level synopsis,
/// options and a SUBCOMMANDS section listing each subcommand (as typed: `filepuff doctor`) with
/// its one-line description.
///
/// # Errors
/// Only the writer's.
pub fn write_man_page(out: &mut dyn Write) -> std::io::Result<()> {
    let mut command = super::Cli::command();
    let mut rendered = Vec::new();
    clap_mangen::Man::new(command.clone()).render(&mut rendered)?;
    // Built, the command has the subcommands clap adds (`help`), as the rendered page does.
    command.build();
    let mut page = String::from_utf8_lossy(&rendered).into_owned();
    // clap_mangen names each subcommand as a page of its own (`filepuff-doctor(1)`); only
    // filepuff(1) is generated, so each is named as it is typed, in bold.
    for sub in command.get_subcommands() {
        let name = sub.get_name().replace('-', "\\-");
        page = page.replace(&format!("\nfilepuff\\-{name}(1)\n"), &format!("\n\\fBfilepuff {name}\\fR\n"));
    }
    out.write_all(page.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completions(shell: Shell) -> String {
        let mut out = Vec::new();
        write_completions(shell, &mut out).expect("write to a Vec");
        String::from_utf8(out).expect("clap_complete writes UTF-8")
    }

    #[test]
    fn completions_name_the_subcommands_and_their_flags() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let script = completions(shell);
            for word in ["mcp", "doctor", "completions", "root", "toolsets"] {
                assert!(script.contains(word), "{shell} completions lack {word}");
            }
        }
    }

    #[test]
    fn man_page_has_the_sections_and_every_subcommand() {
        let mut out = Vec::new();
        write_man_page(&mut out).expect("write to a Vec");
        let page = String::from_utf8(out).expect("roff is UTF-8 here");
        assert!(page.starts_with(".ie \\n(.g .ds Aq"), "not roff: {}", &page[..40.min(page.len())]);
        for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS", ".SH VERSION"] {
            assert!(page.contains(section), "man page lacks {section}");
        }
        let mut command = super::super::Cli::command();
        command.build();
        for sub in command.get_subcommands() {
            let name = sub.get_name();
            assert!(page.contains(&format!("\n\\fBfilepuff {name}\\fR\n")), "man page lacks {name}");
        }
        // Only filepuff(1) is generated: no other page is named.
        assert!(!page.contains("(1)\n"), "a page that is not generated is named: {page}");
    }
}
