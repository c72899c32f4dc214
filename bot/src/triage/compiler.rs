//! Compiler errors in a log: rustc (`error[E0308]: …` then ` --> src/lib.rs:3:5`), TypeScript's
//! `tsc` (`src/a.ts(3,5): error TS2322: …` or, pretty, `src/a.ts:3:5 - error TS2322: …`) and
//! gcc/clang (`a.c:3:5: error: …`) and javac, plain (`src/main/java/com/x/Calc.java:12: error: …`)
//! or through Maven's compiler plugin (`[ERROR] /w/src/main/java/com/x/Calc.java:[12,9] …`).
//! Warnings are left out: they do not fail a build.

use serde::{Deserialize, Serialize};

/// The compiler whose error was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compiler {
    Rustc,
    Tsc,
    /// gcc, clang, or anything printing their `file:line:col: error:` format.
    Cc,
    /// javac, run directly (or by Gradle, Ant, …) or by Maven's compiler plugin.
    Javac,
}

impl Compiler {
    pub fn name(self) -> &'static str {
        match self {
            Compiler::Rustc => "rustc",
            Compiler::Tsc => "tsc",
            Compiler::Cc => "cc",
            Compiler::Javac => "javac",
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
    /// types`, `error TS2322: Type 'string' is …`, `error: 'x' undeclared …`; javac's with its
    /// `symbol:` line below when it has one (`error: cannot find symbol` + `symbol:   variable y`,
    /// Maven printing the same without `error: `).
    pub message: String,
}

/// How far below rustc's `error` header its ` --> ` location may be (a long message wraps).
const RUSTC_LOCATION_WITHIN: usize = 4;
/// How many of javac's indented detail lines below an error (`  symbol: …`, `  location: …`) are
/// searched for its `symbol:` line.
const JAVAC_DETAILS_WITHIN: usize = 4;

/// Every compiler error in `text` (clean lines), in order, each reported once: cargo prints the
/// same error for the library and its test build, Maven each javac error in its `COMPILATION
/// ERROR` block and again under `Failed to execute goal`.
pub fn parse(text: &str) -> Vec<CompileError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<CompileError> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let below = &lines[i + 1..];
        let found = rustc(line, below)
            .or_else(|| tsc(line))
            .or_else(|| javac(line, below))
            .or_else(|| maven_javac(line, below))
            .or_else(|| cc(line))
            .or_else(|| super::kotlin::kotlinc(line));
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

/// javac's own format: `src/main/java/com/x/Calc.java:12: error: cannot find symbol`, then the
/// source line, a caret under it and indented details (`  symbol:   variable y`). The path ends in
/// `.java`: gcc's format is the same but for the column.
fn javac(line: &str, below: &[&str]) -> Option<CompileError> {
    let (location, message) = line.split_once(": error: ")?;
    let (file, line_no) = location.rsplit_once(':')?;
    if !file.ends_with(".java") || file.contains(' ') {
        return None;
    }
    let details = match below.get(1) {
        Some(caret) if caret.trim() == "^" => &below[2..],
        _ => &[],
    };
    Some(CompileError {
        compiler: Compiler::Javac,
        file: file.into(),
        line: line_no.parse().ok()?,
        message: with_symbol(format!("error: {}", message.trim_end()), details.iter().copied()),
    })
}

/// A javac error as Maven's compiler plugin prints it:
/// `[ERROR] /w/src/main/java/com/x/Calc.java:[12,9] cannot find symbol`, its details below
/// unprefixed (in the `COMPILATION ERROR` block) or prefixed with `[ERROR] ` (under `Failed to
/// execute goal`). Warnings are printed at `[WARNING]`. The path is absolute, so may hold spaces,
/// and ends in `.java`, which keeps Surefire's `[ERROR]` lines (`CalcTest.lists:12
/// expected:[1,2] …`) out.
fn maven_javac(line: &str, below: &[&str]) -> Option<CompileError> {
    let (file, rest) = line.strip_prefix("[ERROR] ")?.split_once(":[")?;
    let (numbers, message) = rest.split_once("] ")?;
    let line_no = match numbers.split_once(',') {
        Some((line_no, col)) => {
            col.parse::<u32>().ok()?;
            line_no
        }
        None => numbers,
    };
    if !file.ends_with(".java") || file.starts_with(' ') || message.trim().is_empty() {
        return None;
    }
    let details = below.iter().map(|l| l.strip_prefix("[ERROR] ").unwrap_or(l));
    Some(CompileError {
        compiler: Compiler::Javac,
        file: file.into(),
        line: line_no.parse().ok()?,
        message: with_symbol(message.trim_end().into(), details),
    })
}

/// `message` with javac's `symbol:` detail appended when the indented lines that begin `details`
/// (the lines below the error, past its source and caret) have one.
fn with_symbol<'a>(message: String, details: impl Iterator<Item = &'a str>) -> String {
    let symbol = details
        .take(JAVAC_DETAILS_WITHIN)
        .take_while(|l| l.starts_with("  ") && !l.trim().is_empty())
        .map(str::trim)
        .find(|l| l.starts_with("symbol:"));
    match symbol {
        Some(symbol) => format!("{message}\n{symbol}"),
        None => message,
    }
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
    fn javac_errors_keep_their_symbol_and_warnings_are_left_out() {
        // javac 17 on a broken file, `-Xlint:all`.
        let text = "\
src/main/java/com/x/Calc.java:8: error: cannot find symbol
        return a + y;
                   ^
  symbol:   variable y
  location: class Calc
src/main/java/com/x/Calc.java:12: error: incompatible types: int cannot be converted to String
        return 42;
               ^
src/main/java/com/x/Calc.java:19: warning: [rawtypes] found raw type: List
        List raw = new java.util.ArrayList();
        ^
  missing type arguments for generic class List<E>
2 errors
1 warning
";
        assert_eq!(
            parse(text),
            [
                error(
                    Compiler::Javac,
                    "src/main/java/com/x/Calc.java",
                    8,
                    "error: cannot find symbol\nsymbol:   variable y"
                ),
                error(
                    Compiler::Javac,
                    "src/main/java/com/x/Calc.java",
                    12,
                    "error: incompatible types: int cannot be converted to String"
                ),
            ]
        );
    }

    #[test]
    fn mavens_javac_errors_are_reported_once() {
        // Maven 3.8 with maven-compiler-plugin 3.10.1 and `showWarnings`, cut to the compiler's
        // output: each error is printed again under `Failed to execute goal`.
        let text = "\
[INFO] Compiling 1 source file to /tmp/mj/target/classes
[INFO] /tmp/mj/src/main/java/com/x/Calc.java: /tmp/mj/src/main/java/com/x/Calc.java uses unchecked or unsafe operations.
[WARNING] COMPILATION WARNING : 
[WARNING] /tmp/mj/src/main/java/com/x/Calc.java:[19,9] found raw type: java.util.List
  missing type arguments for generic class java.util.List<E>
[INFO] 1 warning 
[ERROR] COMPILATION ERROR : 
[INFO] -------------------------------------------------------------
[ERROR] /tmp/mj/src/main/java/com/x/Calc.java:[8,20] cannot find symbol
  symbol:   variable y
  location: class com.x.Calc
[ERROR] /tmp/mj/src/main/java/com/x/Calc.java:[12,16] incompatible types: int cannot be converted to java.lang.String
[INFO] 2 errors 
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.10.1:compile (default-compile) on \
project calc: Compilation failure: Compilation failure: 
[ERROR] /tmp/mj/src/main/java/com/x/Calc.java:[8,20] cannot find symbol
[ERROR]   symbol:   variable y
[ERROR]   location: class com.x.Calc
[ERROR] /tmp/mj/src/main/java/com/x/Calc.java:[12,16] incompatible types: int cannot be converted to java.lang.String
[ERROR] -> [Help 1]
[ERROR] [Help 1] http://cwiki.apache.org/confluence/display/MAVEN/MojoFailureException
";
        let file = "/tmp/mj/src/main/java/com/x/Calc.java";
        assert_eq!(
            parse(text),
            [
                error(Compiler::Javac, file, 8, "cannot find symbol\nsymbol:   variable y"),
                error(
                    Compiler::Javac,
                    file,
                    12,
                    "incompatible types: int cannot be converted to java.lang.String"
                ),
            ]
        );
    }

    #[test]
    fn surefires_error_lines_are_not_javac_errors() {
        let text = "\
[ERROR] Failures: 
[ERROR]   CalcTest.lists:12 expected:[1,2] but was:[1]
[ERROR]   CalcTest.java:[3,1] indented, so not a path the compiler plugin printed
[ERROR] /w/NoMessage.java:[3,1] 
[ERROR] /w/Calc.kt:[3,1] not javac's
";
        assert_eq!(parse(text), []);
    }

    #[test]
    fn errors_without_a_location_are_not_compile_errors() {
        assert_eq!(parse("error: failed to download `serde v1.0.0`\n\nCaused by: x\n"), []);
        assert_eq!(parse("npm ERR! code E404\nsome error: here\n"), []);
    }
}
