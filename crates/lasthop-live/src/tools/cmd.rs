//! System commands the tools run to change the host (`nft`, `ip`) and the command lists that undo
//! those changes (recorded in the state file as `host::Change::Commands`).

use std::io::Write;
use std::process::{Command, Stdio};

/// Run `argv`, with `stdin` as its input; an error is the command and its first error line.
pub fn run(argv: &[&str], stdin: Option<&str>) -> Result<(), String> {
    let mut c = Command::new(argv[0]);
    c.args(&argv[1..]).stdout(Stdio::null()).stderr(Stdio::piped());
    if stdin.is_some() {
        c.stdin(Stdio::piped());
    }
    let mut child = c.spawn().map_err(|e| format!("{}: {e}", argv[0]))?;
    if let (Some(text), Some(mut si)) = (stdin, child.stdin.take()) {
        si.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().find(|l| l.starts_with("Error") || l.contains("rror")).or_else(|| err.lines().next()).unwrap_or("failed").trim();
        Err(format!("{}: {line}", argv.join(" ")))
    }
}

/// Run an undo command list; absent things count as removed.
pub fn undo(cmds: &[Vec<String>]) -> Result<(), String> {
    for c in cmds {
        let argv: Vec<&str> = c.iter().map(String::as_str).collect();
        if let Err(e) = run(&argv, None) {
            let gone = e.contains("No such file") || e.contains("does not exist") || e.contains("Cannot find") || e.contains("No such process") || e.contains("FIB table does not exist");
            if !gone {
                return Err(e);
            }
        }
    }
    Ok(())
}
