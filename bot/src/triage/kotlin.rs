//! Kotlin compiler errors as the Kotlin Gradle (and Maven) plugin prints them:
//! - since Kotlin 1.8, a file URI and `line:column`: `e: file:///w/src/main/kotlin/X.kt:12:5 Unresolved reference: y`
//!   (`file:///D:/a/x/X.kt:12:5` on Windows);
//! - before, a path and `(line, column)`: `e: /w/src/main/kotlin/X.kt: (12, 5): Unresolved reference: y`
//!   (`e: E:\a b\X.kt: (2, 12): …` on Windows, spaces and all);
//! - for Gradle's Kotlin DSL scripts, `e: /w/build.gradle.kts:32:5: Unresolved reference: compile`.
//!
//! Maven's plugin may put its level before them (`[ERROR] e: …`). Warnings (`w: …`) and
//! informational lines (`i: …`) are left out: they do not fail a build.

use super::compiler::{CompileError, Compiler};

/// The compiler named in the errors read here.
const KOTLINC: Compiler = Compiler::Kotlinc;

/// Every Kotlin compiler error in `text` (clean lines), in order, each reported once (Gradle
/// repeats a build script's errors in its failure report). The triage reads them line by line
/// through [`kotlinc`] in `compiler::parse`; this is the Kotlin errors alone, for the tests.
#[cfg(test)]
pub(crate) fn parse_kotlin(text: &str) -> Vec<CompileError> {
    let mut out: Vec<CompileError> = Vec::new();
    for error in text.lines().filter_map(kotlinc) {
        if !out.contains(&error) {
            out.push(error);
        }
    }
    out
}

/// One line's Kotlin compiler error, if it is one.
pub(crate) fn kotlinc(line: &str) -> Option<CompileError> {
    let line = line.trim_end();
    let line = line.strip_prefix("[ERROR] ").unwrap_or(line);
    let rest = line.strip_prefix("e: ")?;
    let (file, line_no, message) = match rest.strip_prefix("file://") {
        Some(uri) => uri_location(uri)?,
        None => path_location(rest)?,
    };
    let message = message.trim();
    if message.is_empty() {
        return None;
    }
    Some(CompileError {
        compiler: KOTLINC,
        file: Some(file),
        line: Some(line_no),
        message: message.to_owned(),
    })
}

/// Whether `path` names a Kotlin source or script.
fn is_kotlin(path: &str) -> bool {
    path.ends_with(".kt") || path.ends_with(".kts")
}

/// `/w/X.kt:12:5 message` (or `/D:/a/X.kt:12:5 message`) → the path (`/w/X.kt`, `D:/a/X.kt`), the
/// line and the message. A URI escapes spaces as `%20`.
fn uri_location(uri: &str) -> Option<(String, u32, &str)> {
    let (location, message) = uri.split_once(' ')?;
    let (path, line_no) = line_and_column(location)?;
    // `file:///D:/a/x.kt`: the drive follows the root's slash.
    let path = match path.strip_prefix('/') {
        Some(rest) if rest.as_bytes().get(1) == Some(&b':') => rest,
        _ => path,
    };
    Some((path.replace("%20", " "), line_no, message))
}

/// `/w/X.kt: (12, 5): message`, `E:\a b\X.kt: (12, 5): message` or `/w/b.gradle.kts:32:5: message`.
fn path_location(rest: &str) -> Option<(String, u32, &str)> {
    if let Some((path, after)) = rest.split_once(": (")
        && is_kotlin(path)
    {
        let (numbers, message) = after.split_once("): ")?;
        let (line_no, column) = numbers.split_once(", ")?;
        column.trim().parse::<u32>().ok()?;
        return Some((path.to_owned(), line_no.trim().parse().ok()?, message));
    }
    let (location, message) = rest.split_once(": ")?;
    let (path, line_no) = line_and_column(location)?;
    Some((path.to_owned(), line_no, message))
}

/// `X.kt:12:5` → `X.kt` and 12, for a Kotlin file.
fn line_and_column(location: &str) -> Option<(&str, u32)> {
    let (rest, column) = location.rsplit_once(':')?;
    column.parse::<u32>().ok()?;
    let (path, line_no) = rest.rsplit_once(':')?;
    (is_kotlin(path) && !path.is_empty()).then_some((path, line_no.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(file: &str, line: u32, message: &str) -> CompileError {
        CompileError {
            compiler: KOTLINC,
            file: Some(file.into()),
            line: Some(line),
            message: message.into(),
        }
    }

    #[test]
    fn the_pre_1_8_format_is_read() {
        // Real: Debian's Gradle 4.4.1 with Debian's Kotlin Gradle plugin 1.3.31, offline
        // (`gradle --offline --no-daemon build` on a file with two errors); stderr, without the
        // stack traces Debian's missing resolver hook prints while dependencies resolve.
        let text = "\
e: /tmp/ktg/src/main/kotlin/com/example/Calc.kt: (7, 30): Unresolved reference: offset
e: /tmp/ktg/src/main/kotlin/com/example/Calc.kt: (11, 16): Type mismatch: inferred type is Int but String was expected

FAILURE: Build failed with an exception.

* What went wrong:
Execution failed for task ':compileKotlin'.
> Compilation error. See log for more details
";
        let file = "/tmp/ktg/src/main/kotlin/com/example/Calc.kt";
        assert_eq!(
            parse_kotlin(text),
            [
                error(file, 7, "Unresolved reference: offset"),
                error(file, 11, "Type mismatch: inferred type is Int but String was expected"),
            ]
        );
    }

    #[test]
    fn the_uri_format_and_windows_paths_are_read() {
        // From the corpus: java-twilio-verify-kotlin-compile.log and
        // java-kotlin-koans-kotlin-compile-old-format.log.
        let text = "\
> Task :buildSrc:compileKotlin FAILED
e: file:///D:/DevareaLocal/GIT/twilio-verify-android/buildSrc/src/main/kotlin/plugins/ktlint.gradle.kts:30:5 Unresolved reference: main
e: E:\\WorkSpace\\Berui\\Kotlin Koans\\Builders\\Html builders\\src\\Task.kt: (2, 12): Unresolved reference: html
e: file:///home/runner/work/app/app/src/main/kotlin/My%20App.kt:3:1 Expecting a top level declaration
";
        assert_eq!(
            parse_kotlin(text),
            [
                error(
                    "D:/DevareaLocal/GIT/twilio-verify-android/buildSrc/src/main/kotlin/plugins/ktlint.gradle.kts",
                    30,
                    "Unresolved reference: main"
                ),
                error(
                    "E:\\WorkSpace\\Berui\\Kotlin Koans\\Builders\\Html builders\\src\\Task.kt",
                    2,
                    "Unresolved reference: html"
                ),
                error(
                    "/home/runner/work/app/app/src/main/kotlin/My App.kt",
                    3,
                    "Expecting a top level declaration"
                ),
            ]
        );
    }

    #[test]
    fn script_errors_maven_levels_and_repeats_are_read_once() {
        let text = "\
e: /Users/v/springboot/build.gradle.kts:32:5: Unresolved reference: compile
[ERROR] e: /w/src/main/kotlin/A.kt: (4, 1): Expecting member declaration
e: /Users/v/springboot/build.gradle.kts:32:5: Unresolved reference: compile
";
        assert_eq!(
            parse_kotlin(text),
            [
                error(
                    "/Users/v/springboot/build.gradle.kts",
                    32,
                    "Unresolved reference: compile"
                ),
                error("/w/src/main/kotlin/A.kt", 4, "Expecting member declaration"),
            ]
        );
    }

    #[test]
    fn warnings_and_other_lines_are_not_errors() {
        let text = "\
w: file:///w/src/main/kotlin/A.kt:3:9 Variable 'x' is never used
w: /w/src/main/kotlin/A.kt: (3, 9): Variable 'x' is never used
i: starting the daemon as: /opt/java/openjdk/bin/java -cp …
e: java.lang.OutOfMemoryError: Java heap space
e: /w/notes.txt:3:1: not Kotlin
e: file:///w/A.kt:3:1
";
        assert_eq!(parse_kotlin(text), []);
    }
}
