//! Compiler errors in a log: rustc (`error[E0308]: …` then ` --> src/lib.rs:3:5`), TypeScript's
//! `tsc` (`src/a.ts(3,5): error TS2322: …` or, pretty, `src/a.ts:3:5 - error TS2322: …`) and
//! gcc/clang (`a.c:3:5: error: …`). Warnings are left out: they do not fail a build.

use serde::{Deserialize, Serialize};

/// The compiler whose error was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compiler {
    Rustc,
    Tsc,
    /// gcc, clang, or anything printing their `file:line:col: error:` format.
    Cc,
}

impl Compiler {
    pub fn name(self) -> &'static str {
        match self {
            Compiler::Rustc => "rustc",
            Compiler::Tsc => "tsc",
            Compiler::Cc => "cc",
        }
    }
}

/// One compiler error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    pub compiler: Compiler,
    pub file: String,
    pub line: u32,
    /// The error line as the compiler printed it, location left out: `error[E0308]: mismatched
    /// types`, `error TS2322: Type 'string' is …`, `error: 'x' undeclared …`.
    pub message: String,
}

/// How far below rustc's `error` header its ` --> ` location may be (a long message wraps).
const RUSTC_LOCATION_WITHIN: usize = 4;

/// Every compiler error in `text` (clean lines), in order, each reported once: cargo prints the
/// same error for the library and its test build.
pub fn parse(text: &str) -> Vec<CompileError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<CompileError> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let found = rustc(line, &lines[i + 1..]).or_else(|| tsc(line)).or_else(|| cc(line));
        if let Some(error) = found
            && !out.contains(&error)
        {
            out.push(error);
        }
    }
    out
}

/// A rustc error header with its location below it. Cargo's own `error: could not compile` and
/// rustc's `error: aborting due to …` have no location and are left out that way.
fn rustc(line: &str, below: &[&str]) -> Option<CompileError> {
    let rest = line.strip_prefix("error")?;
    if !(rest.starts_with("[E") || rest.starts_with(": ")) {
        return None;
    }
    let location = below
        .iter()
        .take(RUSTC_LOCATION_WITHIN)
        .take_while(|l| !l.trim().is_empty())
        .find_map(|l| l.trim_start().strip_prefix("--> "))?;
    let (file, line_no, _) = file_line_col(location.trim(), ':')?;
    Some(CompileError {
        compiler: Compiler::Rustc,
        file: file.into(),
        line: line_no,
        message: line.trim_end().into(),
    })
}

/// `src/a.ts(3,5): error TS2322: …` or `src/a.ts:3:5 - error TS2322: …`.
fn tsc(line: &str) -> Option<CompileError> {
    let (location, message) = if let Some((location, message)) = line.split_once("): error TS") {
        let (file, numbers) = location.rsplit_once('(')?;
        let (line_no, _) = numbers.split_once(',')?;
        ((file, line_no.parse().ok()?), message)
    } else {
        let (location, message) = line.split_once(" - error TS")?;
        let (file, line_no, _) = file_line_col(location, ':')?;
        ((file, line_no), message)
    };
    let (file, line_no) = location;
    if file.is_empty() || file.contains(' ') {
        return None;
    }
    Some(CompileError {
        compiler: Compiler::Tsc,
        file: file.into(),
        line: line_no,
        message: format!("error TS{}", message.trim_end()),
    })
}

/// `a.c:3:5: error: …`, `a.c:3: error: …` or `a.c:3:5: fatal error: …`. rustc's short format
/// (`src/lib.rs:3:5: error[E0308]: …`) is the same shape and is counted as rustc's.
fn cc(line: &str) -> Option<CompileError> {
    let (location, message) = [": error", ": fatal error"]
        .iter()
        .find_map(|sep| line.find(sep).map(|i| (&line[..i], line[i + 2..].trim_end())))?;
    if !(message.starts_with("error:") || message.starts_with("error[") || message.starts_with("fatal error:")) {
        return None;
    }
    let (file, line_no) = match file_line_col(location, ':') {
        Some((file, line_no, _)) => (file, line_no),
        None => {
            let (file, line_no) = location.rsplit_once(':')?;
            (file, line_no.parse().ok()?)
        }
    };
    if file.is_empty() || file.contains(' ') {
        return None;
    }
    let compiler = if message.starts_with("error[") {
        Compiler::Rustc
    } else {
        Compiler::Cc
    };
    Some(CompileError {
        compiler,
        file: file.into(),
        line: line_no,
        message: message.into(),
    })
}

/// `file:line:col` split at its last two `sep`s.
fn file_line_col(location: &str, sep: char) -> Option<(&str, u32, u32)> {
    let (rest, col) = location.rsplit_once(sep)?;
    let (file, line) = rest.rsplit_once(sep)?;
    Some((file, line.parse().ok()?, col.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(compiler: Compiler, file: &str, line: u32, message: &str) -> CompileError {
        CompileError {
            compiler,
            file: file.into(),
            line,
            message: message.into(),
        }
    }

    #[test]
    fn each_compiler_format_is_read() {
        let text = "\
error[E0308]: mismatched types
 --> src/lib.rs:3:5
  |
3 |     \"x\"
  |     ^^^ expected `u32`, found `&str`
warning: unused variable: `y`
 --> src/lib.rs:9:9
error: could not compile `tiny` (lib) due to 1 previous error
src/a.ts(3,5): error TS2322: Type 'string' is not assignable to type 'number'.
src/b.ts:7:1 - error TS2304: Cannot find name 'foo'.
main.c:4:12: error: 'y' undeclared (first use in this function)
main.c:4:12: warning: unused
include/x.h:2:10: fatal error: missing.h: No such file or directory
src/lib.rs:3:5: error[E0308]: mismatched types
error[E0308]: mismatched types
 --> src/lib.rs:3:5
Error: Process completed with exit code 101.
";
        assert_eq!(
            parse(text),
            [
                error(Compiler::Rustc, "src/lib.rs", 3, "error[E0308]: mismatched types"),
                error(
                    Compiler::Tsc,
                    "src/a.ts",
                    3,
                    "error TS2322: Type 'string' is not assignable to type 'number'."
                ),
                error(Compiler::Tsc, "src/b.ts", 7, "error TS2304: Cannot find name 'foo'."),
                error(
                    Compiler::Cc,
                    "main.c",
                    4,
                    "error: 'y' undeclared (first use in this function)"
                ),
                error(
                    Compiler::Cc,
                    "include/x.h",
                    2,
                    "fatal error: missing.h: No such file or directory"
                ),
            ]
        );
    }

    #[test]
    fn errors_without_a_location_are_not_compile_errors() {
        assert_eq!(parse("error: failed to download `serde v1.0.0`\n\nCaused by: x\n"), []);
        assert_eq!(parse("npm ERR! code E404\nsome error: here\n"), []);
    }
}
