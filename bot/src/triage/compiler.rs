//! Compiler errors in a log: rustc (`error[E0308]: …` then ` --> src/lib.rs:3:5`), TypeScript's
//! `tsc` (`src/a.ts(3,5): error TS2322: …` or, pretty, `src/a.ts:3:5 - error TS2322: …`),
//! gcc/clang (`a.c:3:5: error: …`), MSVC (`D:\a\x\x\src\a.cpp(253,7): error C2065: …`), the
//! Go compiler (`x/a.go:342:2: undefined: y` under its `# package` header), javac, plain
//! (`src/main/java/com/x/Calc.java:12: error: …`) or through Maven's compiler plugin
//! (`[ERROR] /w/src/main/java/com/x/Calc.java:[12,9] …`), and the linker's undefined symbols (GNU
//! ld's ``a.c:85: undefined reference to `f'``, lld's `undefined symbol: f`, MSVC's `LNK2019`).
//! Warnings are left out: they do not fail a build. So are diagnostics inside a test's captured
//! output (`---- name stdout ----`): compile-fail and compiletest tests print the compiler's
//! output, which is the test's failure, not the job's.

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
    /// The Go compiler (and `go vet`), as `go build`, `go vet` and `go test` print it.
    Go,
    /// Microsoft's C/C++ compiler `cl.exe`, alone or under MSBuild.
    Msvc,
    /// A linker's unresolved symbol: GNU ld, gold, lld or MSVC's `link.exe`.
    Linker,
    /// The Kotlin compiler, as the Kotlin Gradle and Maven plugins print it (`kotlin.rs`).
    Kotlinc,
}

impl Compiler {
    pub fn name(self) -> &'static str {
        match self {
            Compiler::Rustc => "rustc",
            Compiler::Tsc => "tsc",
            Compiler::Cc => "cc",
            Compiler::Javac => "javac",
            Compiler::Go => "go",
            Compiler::Kotlinc => "kotlinc",
            Compiler::Msvc => "msvc",
            Compiler::Linker => "linker",
        }
    }
}

/// One compiler error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    pub compiler: Compiler,
    /// As printed, with MSVC's backslashes turned into slashes; a linker names no source when the
    /// object has no debug information.
    pub file: Option<String>,
    /// Every compiler names the line; a linker only when the object has debug information
    /// (`a.c:85: undefined reference …`, not `a.c:(.text+0x35): …`).
    pub line: Option<u32>,
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
/// ERROR` block and again under `Failed to execute goal`; a linker's missing symbol counts once
/// however many places use it.
pub fn parse(text: &str) -> Vec<CompileError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<CompileError> = Vec::new();
    let mut test_output = false;
    let mut go_block = false;
    for (i, line) in lines.iter().enumerate() {
        if let Some(inside) = test_output_boundary(line) {
            test_output = inside;
            continue;
        }
        if test_output {
            continue;
        }
        if is_go_package_header(line) {
            go_block = true;
            continue;
        }
        let go_error = go_block.then(|| go(line)).flatten();
        // The block ends at the first line that is neither an error nor a continuation of one.
        go_block &= go_error.is_some() || line.starts_with('\t') || is_go_error_limit(line);
        let below = &lines[i + 1..];
        let found = go_error
            .or_else(|| rustc(line, below))
            .or_else(|| tsc(line))
            .or_else(|| javac(line, below))
            .or_else(|| maven_javac(line, below))
            .or_else(|| msvc(line))
            .or_else(|| cc(line))
            .or_else(|| super::kotlin::kotlinc(line))
            .or_else(|| linker(line, below));
        let Some(error) = found else { continue };
        let seen = if error.compiler == Compiler::Linker {
            out.iter()
                .any(|e| e.compiler == Compiler::Linker && e.message == error.message)
        } else {
            out.contains(&error)
        };
        if !seen {
            out.push(error);
        }
    }
    out
}

/// Whether `line` opens (`Some(true)`) or closes (`Some(false)`) a test's captured output in
/// libtest's or compiletest's report: `---- tests::x stdout ----` opens one; the `failures:` or
/// `successes:` list, the `test result:` line and a new build (`   Compiling x`) close it.
fn test_output_boundary(line: &str) -> Option<bool> {
    if line.starts_with("---- ") && (line.ends_with(" stdout ----") || line.ends_with(" stderr ----")) {
        return Some(true);
    }
    let trimmed = line.trim();
    let closes = matches!(trimmed, "failures:" | "successes:")
        || trimmed.starts_with("test result: ")
        || line.starts_with("   Compiling ")
        || line.starts_with("error: could not compile ");
    closes.then_some(false)
}

/// `# example.com/m/pkg` or `# example.com/m/pkg [example.com/m/pkg.test]`: the header the go
/// command prints above a package's compiler (or vet) output.
fn is_go_package_header(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("# ") else {
        return false;
    };
    let (path, note) = rest.split_once(' ').unwrap_or((rest, ""));
    !path.is_empty()
        && path
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '.' | '/' | '-' | '_' | '~' | '+'))
        && (note.is_empty() || (note.starts_with('[') && note.ends_with(']')))
}

/// The Go compiler's `x.go:69:12: too many errors`, which ends its list without being an error.
fn is_go_error_limit(line: &str) -> bool {
    line.ends_with(": too many errors")
}

/// `broken/broken.go:3:23: cannot use …` or, before go 1.10 printed columns,
/// `../x/sys/unix/flock.go:16: undefined: Flock_t`, or `go vet`'s `vet: broken/broken.go:3:23: …`;
/// unindented (a test's `t.Error` lines are indented).
fn go(line: &str) -> Option<CompileError> {
    let line = line.strip_prefix("vet: ").unwrap_or(line);
    if line.starts_with(char::is_whitespace) || is_go_error_limit(line) {
        return None;
    }
    let dot_go = line.find(".go:")?;
    let (file, rest) = line.split_at(dot_go + 3);
    let (place, message) = rest[1..].split_once(": ")?;
    let (line_no, col) = place.split_once(':').unwrap_or((place, "0"));
    col.parse::<u32>().ok()?;
    if file.contains(char::is_whitespace) || message.trim().is_empty() {
        return None;
    }
    Some(CompileError {
        compiler: Compiler::Go,
        file: Some(file.into()),
        line: Some(line_no.parse().ok()?),
        message: message.trim_end().into(),
    })
}

/// `D:\a\x\x\src\kj\exception.c++(1176,8): error C2065: 'ssize_t': undeclared identifier
/// [D:\a\x\x\build\kj.vcxproj]`, or `…\a.h(46): fatal error C1083: …`, behind MSBuild's
/// `12>` project number or its indentation. The path may hold spaces (`C:\Program Files
/// (x86)\…\winnt.h(8078,19)`); MSBuild's project and cl's `(compiling source file …)` notes are
/// left out of the message.
fn msvc(line: &str) -> Option<CompileError> {
    let (location, message) = [": error C", ": fatal error C"]
        .iter()
        .find_map(|sep| line.find(sep).map(|i| (&line[..i], line[i + 2..].trim_end())))?;
    let code = message.split_once(" C").map(|(_, rest)| rest)?;
    let digits = code.split_once(':').map(|(digits, _)| digits)?;
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let location = location.strip_suffix(')')?;
    let (file, numbers) = location.rsplit_once('(')?;
    let line_no = numbers.split_once(',').map_or(numbers, |(line_no, _)| line_no);
    let file = file.trim_start();
    let file = match file.split_once('>') {
        Some((project, rest)) if project.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => file,
    };
    let extension = file.rsplit(['\\', '/']).next()?.rsplit_once('.').map(|(_, ext)| ext)?;
    if file.is_empty() || extension.is_empty() || extension.contains(char::is_whitespace) {
        return None;
    }
    let message = message
        .strip_suffix(']')
        .and_then(|m| m.rsplit_once(" ["))
        .map_or(message, |(m, _)| m);
    let message = message
        .strip_suffix(')')
        .and_then(|m| m.rsplit_once(" (compiling source file "))
        .map_or(message, |(m, _)| m);
    Some(CompileError {
        compiler: Compiler::Msvc,
        file: Some(file.replace('\\', "/")),
        line: Some(line_no.parse().ok()?),
        message: message.trim_end().into(),
    })
}

/// An unresolved symbol: GNU ld's ``/src/a.c:85: undefined reference to `f'`` (placed by the
/// object's debug information), ``a.c:(.text+0x357): undefined reference to `f'`` or
/// ``/usr/bin/ld: a.o: in function `main': a.c:12:(.text+0x1c): undefined reference to `f'``;
/// lld's `ld.lld: error: undefined symbol: f` with its `>>> referenced by a.c:12` below; MSVC's
/// `a.obj : error LNK2019: unresolved external symbol f referenced in function main`. The file is
/// the source when the linker names one, not an object or archive.
fn linker(line: &str, below: &[&str]) -> Option<CompileError> {
    if let Some((place, symbol)) = line.split_once(": undefined reference to ") {
        let place = place.rsplit(' ').next().unwrap_or(place);
        let (file, line_no) = linker_place(place);
        return Some(CompileError {
            compiler: Compiler::Linker,
            file,
            line: line_no,
            message: format!("undefined reference to {}", symbol.trim_end()),
        });
    }
    if let Some((_, symbol)) = line.split_once("error: undefined symbol: ") {
        let referenced = below
            .iter()
            .take_while(|l| l.starts_with(">>> "))
            .find_map(|l| l.strip_prefix(">>> referenced by "))
            .and_then(|r| r.split(' ').next());
        let (file, line_no) = referenced.map_or((None, None), linker_place);
        return Some(CompileError {
            compiler: Compiler::Linker,
            file,
            line: line_no,
            message: format!("undefined symbol: {}", symbol.trim_end()),
        });
    }
    let (_, rest) = line.split_once(": error LNK")?;
    let (code, message) = rest.split_once(": ")?;
    if !matches!(code, "2019" | "2001") {
        return None;
    }
    Some(CompileError {
        compiler: Compiler::Linker,
        file: None,
        line: None,
        message: format!("error LNK{code}: {}", message.trim_end()),
    })
}

/// A linker's `a.c:85`, `a.c:12:(.text+0x1c)` or `a.c:(.text+0x357)` → the source and its line
/// when it names them; an object (`a.o:(.text+0x5)`) is no source.
fn linker_place(place: &str) -> (Option<String>, Option<u32>) {
    let place = place.split(":(").next().unwrap_or(place).trim_end_matches(':');
    let (file, line_no) = match place.rsplit_once(':') {
        Some((file, line_no)) if line_no.parse::<u32>().is_ok() => (file, line_no.parse().ok()),
        _ => (place, None),
    };
    let object = [".o", ".obj", ".a", ".so", ".lib", ")"]
        .iter()
        .any(|ext| file.ends_with(ext));
    if file.is_empty() || object {
        return (None, None);
    }
    (Some(file.to_owned()), line_no)
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
        file: Some(file.into()),
        line: Some(line_no),
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
        file: Some(file.into()),
        line: Some(line_no),
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
        file: Some(file.into()),
        line: Some(line_no),
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
        file: Some(file.into()),
        line: Some(line_no.parse().ok()?),
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
        file: Some(file.into()),
        line: Some(line_no.parse().ok()?),
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
            file: Some(file.into()),
            line: Some(line),
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
    fn go_errors_under_their_package_header_are_each_a_finding() {
        // go 1.19 here: `go test ./...`, then `go vet ./...`, on a package that does not build.
        let text = "\
# example.com/goproj/broken [example.com/goproj/broken.test]
broken/broken.go:6:9: cannot use \"s\" (untyped string constant) as int value in return statement
broken/broken.go:10:14: undefined: undefinedName
FAIL\texample.com/goproj/broken [build failed]
FAIL
# example.com/goproj/broken
vet: broken/broken.go:6:9: cannot use \"s\" (untyped string constant) as int value in return statement
";
        let wrong_type = "cannot use \"s\" (untyped string constant) as int value in return statement";
        assert_eq!(
            parse(text),
            [
                error(Compiler::Go, "broken/broken.go", 6, wrong_type),
                error(Compiler::Go, "broken/broken.go", 10, "undefined: undefinedName"),
            ]
        );
        // A Travis CI job of go 1.8, before columns (golang/go#21254), and the compiler's limit
        // line of go 1.18 (golang/go#57217 quotes the errors before it).
        let old = "\
travis@d282747cb28c:~/gopath/src/github.com/hacdias/filemanager$ GOOS=openbsd GOARCH=arm go build cmd/filemanager/main.go
# golang.org/x/sys/unix
../../../golang.org/x/sys/unix/flock.go:16: undefined: Flock_t
../../../golang.org/x/sys/unix/sockcmsg_unix.go:37: undefined: Cmsghdr
../../../golang.org/x/sys/unix/syscall_unix.go:201:9: too many errors
";
        assert_eq!(
            parse(old),
            [
                error(
                    Compiler::Go,
                    "../../../golang.org/x/sys/unix/flock.go",
                    16,
                    "undefined: Flock_t"
                ),
                error(
                    Compiler::Go,
                    "../../../golang.org/x/sys/unix/sockcmsg_unix.go",
                    37,
                    "undefined: Cmsghdr"
                ),
            ]
        );
    }

    #[test]
    fn go_test_log_lines_are_not_compile_errors() {
        // `go test` (go 1.19) of a failing test: its `t.Error` line is indented, and no package
        // header precedes it.
        let text = "--- FAIL: TestAddWrong (0.00s)\n    calc_test.go:17: Add(2, 2) = 4, want 5\nFAIL\n\
                    FAIL\texample.com/goproj/calc\t0.002s\n# a heading\ncalc.go:3: not after a header line\n";
        assert_eq!(parse(text), []);
    }

    #[test]
    fn msvc_errors_are_read_behind_msbuild_and_timestamps() {
        // MSBuild on GitHub Actions' windows-latest (capnproto/capnproto#1111), and a line of a
        // raw job log with its timestamp removed (gbionics/whole-body-estimators#6).
        let text = "\
D:\\a\\capnproto\\capnproto\\c++\\src\\kj\\exception.c++(1176,8): error C2065: 'ssize_t': undeclared identifier [D:\\a\\capnproto\\capnproto\\build-output\\src\\kj\\kj.vcxproj]
D:\\a\\capnproto\\capnproto\\c++\\src\\kj\\exception.c++(1176,16): error C2146: syntax error: missing ';' before identifier 'i' [D:\\a\\capnproto\\capnproto\\build-output\\src\\kj\\kj.vcxproj]
  34>C:\\Program Files (x86)\\Windows Kits\\10\\Include\\10.0.18362.0\\um\\winnt.h(8078,19): error C3861: 'ReadAcquire8': identifier not found (compiling source file ..\\main.cpp) [F:\\x\\common.vcxproj]
x\\a.h(5): fatal error C1083: Cannot open include file: 'missing.h': No such file or directory
x\\a.cs(12,18): error CS0103: not cl's
x.cpp(3): warning C4100: unreferenced formal parameter
";
        let file = "D:/a/capnproto/capnproto/c++/src/kj/exception.c++";
        assert_eq!(
            parse(text),
            [
                error(
                    Compiler::Msvc,
                    file,
                    1176,
                    "error C2065: 'ssize_t': undeclared identifier"
                ),
                error(
                    Compiler::Msvc,
                    file,
                    1176,
                    "error C2146: syntax error: missing ';' before identifier 'i'"
                ),
                error(
                    Compiler::Msvc,
                    "C:/Program Files (x86)/Windows Kits/10/Include/10.0.18362.0/um/winnt.h",
                    8078,
                    "error C3861: 'ReadAcquire8': identifier not found"
                ),
                error(
                    Compiler::Msvc,
                    "x/a.h",
                    5,
                    "fatal error C1083: Cannot open include file: 'missing.h': No such file or directory"
                ),
            ]
        );
    }

    #[test]
    fn undefined_symbols_are_linker_errors_placed_when_the_linker_can() {
        // gcc 12 and GNU ld 2.40 here, with `-g` and without: two functions declared, not defined.
        let with_debug_info = "\
/usr/bin/ld: /tmp/ccdkl1BX.o: in function `main':
/tmp/ldtest/main.c:5: undefined reference to `missing'
/usr/bin/ld: /tmp/ldtest/main.c:5: undefined reference to `other'
collect2: error: ld returned 1 exit status
";
        let placed = |symbol: &str| CompileError {
            compiler: Compiler::Linker,
            file: Some("/tmp/ldtest/main.c".into()),
            line: Some(5),
            message: format!("undefined reference to `{symbol}'"),
        };
        assert_eq!(parse(with_debug_info), [placed("missing"), placed("other")]);
        let without = "\
/usr/bin/ld: /tmp/ccA0gpgJ.o: in function `main':
main.c:(.text+0xa): undefined reference to `missing'
/usr/bin/ld: main.c:(.text+0x16): undefined reference to `other'
/usr/bin/ld: main.c:(.text+0x2a): undefined reference to `other'
collect2: error: ld returned 1 exit status
";
        let unplaced = |symbol: &str| CompileError {
            line: None,
            file: Some("main.c".into()),
            ..placed(symbol)
        };
        assert_eq!(parse(without), [unplaced("missing"), unplaced("other")]);
        // An archive's member and MSVC's link.exe name no source.
        let others = "\
libstmp.a(stmp.c.o):(.text+0x1c): undefined reference to `get_all_words'
main.obj : error LNK2019: unresolved external symbol missing referenced in function main
main.obj : error LNK1120: 1 unresolved externals
";
        assert_eq!(
            parse(others),
            [
                CompileError {
                    compiler: Compiler::Linker,
                    file: None,
                    line: None,
                    message: "undefined reference to `get_all_words'".into(),
                },
                CompileError {
                    compiler: Compiler::Linker,
                    file: None,
                    line: None,
                    message: "error LNK2019: unresolved external symbol missing referenced in function main".into(),
                },
            ]
        );
    }

    #[test]
    fn diagnostics_inside_a_tests_output_are_the_tests() {
        // compiletest's report of a ui test (rust-lang/rust#107446, cut by rust-log-analyzer),
        // then a build error after the test run.
        let text = "\
---- [ui] tests/ui/str/str-escape.rs stdout ----

error: test compilation failed although it shouldn't!
--- stderr -------------------------------
error: multiple lines skipped by escaped newline
  --> fake-test-src-base/str/str-escape.rs:3:14
LL |       let s = \"\\
failures:
    [ui] tests/ui/str/str-escape.rs

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.10s
   Compiling later v0.1.0 (/w/later)
error[E0425]: cannot find value `x` in this scope
 --> src/lib.rs:1:13
";
        assert_eq!(
            parse(text),
            [error(
                Compiler::Rustc,
                "src/lib.rs",
                1,
                "error[E0425]: cannot find value `x` in this scope"
            )]
        );
    }

    #[test]
    fn errors_without_a_location_are_not_compile_errors() {
        assert_eq!(parse("error: failed to download `serde v1.0.0`\n\nCaused by: x\n"), []);
        assert_eq!(parse("npm ERR! code E404\nsome error: here\n"), []);
    }
}
