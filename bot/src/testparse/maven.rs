//! Maven Surefire (and Failsafe) console output, as `mvn test` and `mvn verify` print it:
//! - per class, `Tests run: 3, Failures: 1, Errors: 1, Skipped: 0, Time elapsed: 0.1 s <<< FAILURE! - in
//!   com.example.CalcTest` (`-- in` since Surefire 3);
//! - per failing test, a header (`addsWrong(com.example.CalcTest)  Time elapsed: 0.01 s  <<< FAILURE!` in
//!   Surefire 2, with only the method for JUnit 5; `com.example.CalcTest.addsWrong -- Time elapsed: 0.01 s
//!   <<< FAILURE!` in Surefire 3), then the exception and its stack trace;
//! - per module, the `Results:` lists (`Failures:`, `Errors:`, `Flakes:` of `CalcTest.addsWrong:15 message`,
//!   grouped by `Run 1:`, `Run 2:` when failing tests are re-run) and the module's totals
//!   `Tests run: 3, Failures: 1, Errors: 1, Skipped: 0`;
//! - at the end, `Please refer to <module>/target/surefire-reports` for each module whose tests failed.
//!
//! Maven's `[INFO] `/`[ERROR] ` prefixes are optional: Surefire before 2.19 printed none.
//!
//! A failure is placed at its test class's frame of the stack trace
//! (`at com.example.CalcTest.addsWrong(CalcTest.java:15)`), or else at the line the `Results:` list gives.
//! The file is derived, not printed: when the log names the module's directory (the `Please refer to`
//! line), it is that directory, Maven's default test source root for the file's language
//! (`src/test/java`, `src/test/kotlin`, …) and the package's path; otherwise it is the bare file name
//! of the frame.

use std::collections::{HashMap, HashSet};

use super::text;
use super::{Failure, Runner, TestReport};

pub(super) fn is_marker(line: &str) -> bool {
    let line = content(line);
    tests_run(line).is_some() || test_header(line).is_some() || line.trim() == "T E S T S"
}

/// The line without Maven's level prefix (`[INFO] `, `[ERROR] `, …).
fn content(line: &str) -> &str {
    for level in ["[INFO]", "[ERROR]", "[WARNING]", "[WARN]", "[DEBUG]"] {
        if let Some(rest) = line.strip_prefix(level) {
            return rest.strip_prefix(' ').unwrap_or(rest);
        }
    }
    line
}

fn has_level(line: &str) -> bool {
    content(line).len() != line.len()
}

/// The counts of a `Tests run:` line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    run: u64,
    failures: u64,
    errors: u64,
    skipped: u64,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.run += other.run;
        self.failures += other.failures;
        self.errors += other.errors;
        self.skipped += other.skipped;
    }

    fn failed(&self) -> u64 {
        self.failures + self.errors
    }

    /// Flaky tests are counted as run and passed.
    fn passed(&self) -> u64 {
        self.run.saturating_sub(self.failed() + self.skipped)
    }
}

/// A `Tests run:` line: a class's (with `Time elapsed`, and the class since Surefire 2.19) or a
/// module's totals.
struct TestsRun<'a> {
    counts: Counts,
    per_class: bool,
    class: Option<&'a str>,
}

/// `Tests run: 3, Failures: 1, Errors: 1, Skipped: 0[, Flakes: 1][, Time elapsed: 0.1 s <<< FAILURE! - in X]`
fn tests_run(line: &str) -> Option<TestsRun<'_>> {
    let rest = line.trim_start().strip_prefix("Tests run: ")?;
    let mut items = rest.split(", ");
    let mut counts = Counts {
        run: items.next()?.trim().parse().ok()?,
        ..Counts::default()
    };
    let mut seen = 0;
    let mut per_class = false;
    let mut class = None;
    for item in items {
        let (key, value) = item.split_once(": ")?;
        let number = || value.trim().parse::<u64>().ok();
        match key {
            "Failures" => counts.failures = number()?,
            "Errors" => counts.errors = number()?,
            "Skipped" => counts.skipped = number()?,
            "Flakes" => {
                number()?;
            }
            "Time elapsed" => {
                per_class = true;
                class = [" -- in ", " - in "]
                    .iter()
                    .find_map(|sep| value.split_once(sep))
                    .map(|(_, class)| class.trim());
            }
            _ => return None,
        }
        seen += 1;
    }
    (seen >= 3).then_some(TestsRun {
        counts,
        per_class,
        class,
    })
}

/// A failing test's header → the test as Surefire names it: `addsWrong(com.example.CalcTest)`,
/// `com.example.CalcTest.addsWrong`, `addsWrong` (JUnit 5 on Surefire 2) or a class (a failure
/// outside any test, such as a `@BeforeClass`).
fn test_header(line: &str) -> Option<&str> {
    let trimmed = line.trim_end();
    if !(trimmed.ends_with("<<< FAILURE!") || trimmed.ends_with("<<< ERROR!")) || trimmed.starts_with("Tests run:") {
        return None;
    }
    let (name, _) = [" -- Time elapsed: ", "  Time elapsed: "]
        .iter()
        .find_map(|sep| trimmed.split_once(sep))?;
    let name = name.trim();
    (!name.is_empty()).then_some(name)
}

/// `[INFO] --- maven-surefire-plugin:2.22.2:test (default-test) @ calc ---` → `calc`.
fn plugin_module(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("--- ")?.strip_suffix(" ---")?;
    let (_, module) = rest.rsplit_once(" @ ")?;
    Some(module.trim())
}

/// `Failed to execute goal … on project calc: There are test failures.` → `calc`.
fn failed_project(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("Failed to execute goal ")?;
    let (_, project) = rest.split_once(" on project ")?;
    let (project, _) = project.split_once(':')?;
    Some(project.trim())
}

/// `Please refer to /w/calc/target/surefire-reports for the individual test results.` → `/w/calc`.
fn module_dir(line: &str) -> Option<&str> {
    let dir = line
        .strip_prefix("Please refer to ")?
        .strip_suffix(" for the individual test results.")?;
    ["surefire-reports", "failsafe-reports"].iter().find_map(|reports| {
        let target = dir.strip_suffix(reports)?;
        let target = target.strip_suffix('/').or_else(|| target.strip_suffix('\\'))?;
        let base = target.strip_suffix("target")?;
        let base = base.strip_suffix('/').or_else(|| base.strip_suffix('\\'))?;
        (!base.is_empty()).then_some(base)
    })
}

/// A frame of a Java stack trace: `at java.base/com.example.CalcTest.addsWrong(CalcTest.java:15)`.
pub(super) struct Frame<'a> {
    pub(super) class: &'a str,
    pub(super) method: &'a str,
    pub(super) file: &'a str,
    pub(super) line: u32,
}

pub(super) fn frame(line: &str) -> Option<Frame<'_>> {
    let rest = line.trim_start().strip_prefix("at ")?;
    let (call, place) = rest.trim_end().strip_suffix(')')?.split_once('(')?;
    // A module or class loader before the class: `java.base/java.lang.Thread.run`, `app//a.B.c`.
    let call = call.rsplit('/').next()?;
    let (class, method) = call.rsplit_once('.')?;
    let (file, line) = place.rsplit_once(':')?;
    Some(Frame {
        class,
        method,
        file,
        line: line.parse().ok()?,
    })
}

/// The class a name or frame belongs to, without its package: `CalcTest`, `ShoutTest$Empty`.
fn simple(class: &str) -> &str {
    class.rsplit('.').next().unwrap_or(class)
}

/// A method as the frame shows it: a parameterised test's name without its parameters.
fn base_method(method: &str) -> &str {
    let end = method.find(['(', '[']).unwrap_or(method.len());
    &method[..end]
}

/// A failing test's block: its header and the exception below it.
struct Block {
    module: Option<String>,
    /// Fully qualified, nested classes with `$`.
    class: String,
    method: Option<String>,
    message: String,
    place: Option<(String, u32)>,
}

impl Block {
    fn new(header: &str, class: Option<&str>, module: Option<&str>, body: &[&str]) -> Block {
        let (mut class, method) = split_name(header, class);
        let frames: Vec<Frame<'_>> = body.iter().filter_map(|l| frame(l)).collect();
        let in_class = |f: &Frame<'_>| {
            f.class == class || f.class.strip_prefix(class.as_str()).is_some_and(|r| r.starts_with('$'))
        };
        let base = method.as_deref().map(base_method);
        let found = frames
            .iter()
            .find(|f| in_class(f) && Some(f.method) == base)
            .or_else(|| frames.iter().find(|f| in_class(f)));
        let place = found.map(|f| (source_path(f.class, f.file), f.line));
        // A JUnit 5 test in a nested class: its header names the outer class only.
        if let Some(f) = found.filter(|f| Some(f.method) == base) {
            class = f.class.to_owned();
        }
        let message = text::message(body.iter().take_while(|l| frame(l).is_none()).map(|l| l.trim()));
        Block {
            module: module.map(str::to_owned),
            class,
            method,
            message,
            place,
        }
    }

    fn name(&self) -> String {
        match &self.method {
            Some(method) => format!("{}.{method}", self.class),
            None => self.class.clone(),
        }
    }

    fn key(&self) -> Key {
        key(&self.class, self.method.as_deref())
    }
}

/// A test's class and method from the name Surefire gives it, with `class` the class being run.
fn split_name(name: &str, class: Option<&str>) -> (String, Option<String>) {
    if let Some(class) = class {
        if name == class {
            return (class.to_owned(), None);
        }
        if let Some(method) = name.strip_prefix(class).and_then(|m| m.strip_prefix('.')) {
            return (class.to_owned(), Some(method.to_owned()));
        }
    }
    // JUnit 4: `method(com.example.Class)`.
    if let Some(open) = name.rfind('(')
        && let Some(inner) = name[open + 1..].strip_suffix(')')
        && !inner.contains([' ', ','])
        && inner.contains('.')
    {
        let method = &name[..open];
        // Re-run groups repeat the class: `com.example.Class.method(com.example.Class)`.
        let method = method
            .strip_prefix(inner)
            .and_then(|m| m.strip_prefix('.'))
            .unwrap_or(method);
        return (inner.to_owned(), Some(method.to_owned()));
    }
    // Surefire 3: `com.example.Class.method`.
    if let Some((qualified, _)) = base_method(name).rsplit_once('.')
        && qualified.contains('.')
    {
        return (qualified.to_owned(), Some(name[qualified.len() + 1..].to_owned()));
    }
    match class {
        Some(class) => (class.to_owned(), Some(name.to_owned())),
        None => (name.to_owned(), None),
    }
}

/// Where a test's source is, from its frame: `com.example.CalcTest$Inner` in `CalcTest.java` →
/// `com/example/CalcTest.java`, placed under the module's directory later when it is known.
fn source_path(class: &str, file: &str) -> String {
    match class.rsplit_once('.') {
        Some((package, _)) => format!("{}/{file}", package.replace('.', "/")),
        None => file.to_owned(),
    }
}

/// Maven's default test source root for a file's language.
pub(super) fn test_root(file: &str) -> Option<&'static str> {
    let (_, extension) = file.rsplit_once('.')?;
    Some(match extension {
        "java" => "src/test/java",
        "kt" => "src/test/kotlin",
        "groovy" => "src/test/groovy",
        "scala" => "src/test/scala",
        _ => return None,
    })
}

/// A test, as the `Results:` lists and the blocks both name it: the class without its package,
/// and the method without its parameters.
type Key = (String, Option<String>);

fn key(class: &str, method: Option<&str>) -> Key {
    (simple(class).to_owned(), method.map(|m| base_method(m).to_owned()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    Failures,
    Errors,
    Flakes,
}

/// `Failures:`, `Errors:`, `Flakes:`, and before Surefire 2.19 `Failed tests:`, `Tests in error:`
/// (which could have the first entry on the same line).
fn list_heading(line: &str) -> Option<(List, &str)> {
    [
        ("Failures:", List::Failures),
        ("Errors:", List::Errors),
        ("Flakes:", List::Flakes),
        ("Failed tests:", List::Failures),
        ("Tests in error:", List::Errors),
    ]
    .iter()
    .find_map(|(heading, list)| Some((*list, line.strip_prefix(heading)?.trim())))
}

/// An entry of a `Results:` list.
struct Listed {
    list: List,
    /// As the entry or its re-run group names it.
    class: String,
    method: Option<String>,
    line: Option<u32>,
    message: String,
}

impl Listed {
    fn key(&self) -> Key {
        key(&self.class, self.method.as_deref())
    }
}

/// `CalcTest.addsWrong:15 message`, `CalcTest.divides:20 » Arithmetic / by zero`,
/// `Test1.failInMethod:43->innerFailure:68 NullPointer Fail here`, `Test>Base.check:12 message`,
/// and before Surefire 2.13 `addsWrong(com.example.CalcTest): message`.
fn list_entry(entry: &str, list: List, group: Option<&(String, Option<String>)>) -> Option<Listed> {
    let entry = entry.trim();
    if let Some((name, message)) = entry.split_once("): ")
        && !name.contains(' ')
    {
        let (class, method) = split_name(&format!("{name})"), None);
        return Some(Listed {
            list,
            class,
            method,
            line: None,
            message: text::message([message]),
        });
    }
    let (location, message) = entry.split_once(' ').unwrap_or((entry, ""));
    let location = location.split("->").next().unwrap_or(location);
    let (name, line) = match location.rsplit_once(':') {
        Some((name, line)) if line.parse::<u32>().is_ok() => (name, line.parse().ok()),
        _ => (location, None),
    };
    // `Test>Base.check`: the test class, then where the method is declared.
    let (class, method) = match name.split_once('>') {
        Some((class, declared)) => (class, declared.rsplit_once('.').map(|(_, m)| m)),
        None => match name.rsplit_once('.') {
            Some((class, method)) => (class, Some(method)),
            None => (name, None),
        },
    };
    if class.is_empty() {
        return None;
    }
    let (class, method) = match group {
        Some((group_class, group_method)) if simple(group_class) == class => {
            (group_class.clone(), group_method.clone())
        }
        _ => (class.to_owned(), method.map(str::to_owned)),
    };
    let message = message.trim_start_matches('»').trim();
    Some(Listed {
        list,
        class,
        method,
        line,
        message: text::message([message]),
    })
}

pub(super) fn parse(text: &str) -> Option<TestReport> {
    let mut lines = text::Lines::new(text);
    let mut module: Option<&str> = None;
    let mut class: Option<&str> = None;
    let mut totals: Option<Counts> = None;
    // Counts of classes since the last totals: a module whose totals were cut off.
    let mut pending = Counts::default();
    let mut blocks: Vec<Block> = Vec::new();
    let mut listed: Vec<Listed> = Vec::new();
    let mut list: Option<List> = None;
    let mut group: Option<(String, Option<String>)> = None;
    let mut group_taken = false;
    // Fully qualified classes by their simple name, for entries of the lists.
    let mut classes: HashMap<String, String> = HashMap::new();
    let mut last_failed: Option<&str> = None;
    let mut dirs: Vec<(Option<&str>, &str)> = Vec::new();
    let mut found = false;
    // In a `Results:` section, where lists may come without level prefixes (Surefire before 2.19).
    let mut in_results = false;
    while let Some(raw) = lines.next() {
        let line = content(raw);
        if let Some(name) = plugin_module(line) {
            module = Some(name);
            list = None;
            in_results = false;
        } else if matches!(line.trim_end(), "Results:" | "Results :") {
            in_results = true;
        } else if let Some(name) = line.strip_prefix("Running ").map(str::trim)
            && !name.is_empty()
            && !name.contains(' ')
        {
            class = Some(name);
            classes.insert(simple(name).to_owned(), name.to_owned());
            list = None;
            in_results = false;
        } else if let Some(run) = tests_run(line) {
            found = true;
            list = None;
            if run.per_class {
                pending.add(run.counts);
                if let Some(name) = run.class {
                    class = Some(name);
                    classes.insert(simple(name).to_owned(), name.to_owned());
                }
            } else {
                totals.get_or_insert_default().add(run.counts);
                pending = Counts::default();
            }
        } else if let Some(header) = test_header(line) {
            found = true;
            list = None;
            let body = lines.until(|l| l.trim().is_empty() || has_level(l) || test_header(l).is_some());
            blocks.push(Block::new(header, class, module, body));
        } else if let Some((heading, first)) = list_heading(line).filter(|_| in_results || has_level(raw)) {
            found = true;
            list = Some(heading);
            group = None;
            if !first.is_empty() {
                listed.extend(list_entry(first, heading, None));
            }
        } else if let Some(current) = list {
            let trimmed = line.trim();
            if trimmed.is_empty() {
                list = None;
            } else if line.starts_with("  ") {
                // `Run 1: CalcTest.x:12 message` … `Run 2: PASS` under a re-run group: the first run says it.
                let run = trimmed
                    .strip_prefix("Run ")
                    .and_then(|r| r.split_once(": "))
                    .map(|(_, entry)| entry);
                match run {
                    Some("PASS") => {}
                    Some(_) if group_taken => {}
                    Some(entry) => {
                        group_taken = true;
                        listed.extend(list_entry(entry, current, group.as_ref()));
                    }
                    None => listed.extend(list_entry(trimmed, current, None)),
                }
            } else if !trimmed.contains(' ') {
                let (group_class, group_method) = split_name(trimmed, None);
                group = Some((group_class, group_method));
                group_taken = false;
            } else {
                list = None;
            }
        } else if let Some(project) = failed_project(line) {
            last_failed = Some(project);
        } else if let Some(dir) = module_dir(line) {
            dirs.push((last_failed.take(), dir));
        }
    }
    if !found {
        return None;
    }

    let flaky: HashSet<Key> = listed
        .iter()
        .filter(|l| l.list == List::Flakes)
        .map(Listed::key)
        .collect();
    let failing: Vec<&Listed> = listed.iter().filter(|l| l.list != List::Flakes).collect();
    let dir_of = |module: Option<&str>| -> Option<&str> {
        match module {
            Some(module) => dirs
                .iter()
                .find(|(project, _)| *project == Some(module))
                .map(|(_, dir)| *dir)
                .or_else(|| (dirs.len() == 1 && dirs[0].0.is_none()).then(|| dirs[0].1)),
            None => (dirs.len() == 1).then(|| dirs[0].1),
        }
    };

    let mut report = TestReport::new(Runner::Maven);
    let mut named: HashSet<String> = HashSet::new();
    let mut placed: HashSet<Key> = HashSet::new();
    for block in &blocks {
        let key = block.key();
        let name = block.name();
        // Re-runs print a block per run; a flaky test's blocks are runs that later passed.
        if flaky.contains(&key) || !named.insert(name.clone()) {
            continue;
        }
        let entry = failing.iter().find(|l| l.key() == key);
        let mut failure = Failure::named(name);
        failure.message = if block.message.is_empty() {
            entry.map(|l| l.message.clone()).unwrap_or_default()
        } else {
            block.message.clone()
        };
        match &block.place {
            Some((path, line)) => failure.locate((in_module(path, dir_of(block.module.as_deref())), *line)),
            None => failure.line = entry.and_then(|l| l.line),
        }
        placed.insert(key);
        report.failures.push(failure);
    }
    // Failures listed without a block of their own (the blocks were cut from the log).
    for entry in failing {
        if !placed.insert(entry.key()) {
            continue;
        }
        let class = if entry.class.contains('.') {
            entry.class.clone()
        } else {
            classes
                .get(&entry.class)
                .cloned()
                .unwrap_or_else(|| entry.class.clone())
        };
        let mut failure = Failure::named(match &entry.method {
            Some(method) => format!("{class}.{method}"),
            None => class,
        });
        failure.message = entry.message.clone();
        failure.line = entry.line;
        report.failures.push(failure);
    }

    let mut counts = totals.unwrap_or_default();
    counts.add(pending);
    report.complete = totals.is_some() && pending == Counts::default();
    report.passed = counts.passed();
    report.skipped = counts.skipped;
    report.failed = if report.complete {
        counts.failed()
    } else {
        counts.failed().max(report.failures.len() as u64)
    };
    Some(report)
}

/// A source path from a frame (`com/example/CalcTest.java`) placed in its module: under the module's
/// directory and default test source root when both are known, or else the frame's bare file name.
fn in_module(path: &str, dir: Option<&str>) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    match (dir, test_root(file)) {
        (Some(dir), Some(root)) => {
            let windows = dir.contains('\\') && !dir.contains('/');
            let joined = format!("{dir}/{root}/{path}");
            if windows { joined.replace('/', "\\") } else { joined }
        }
        _ => file.to_owned(),
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
    use crate::testparse::parse;
    use crate::testparse::test_support::{assert_complete, failure, unplaced};

    #[test]
    fn a_multi_module_build_places_failures_in_their_modules() {
        let report = parse(include_str!("samples/maven_multimodule.txt"), None).unwrap();
        assert_complete(
            &report,
            Runner::Maven,
            (2, 4, 1),
            &[
                failure(
                    "com.example.calc.CalcTest.addsWrong",
                    "/tmp/mvnmm/calc/src/test/java/com/example/calc/CalcTest.java",
                    16,
                    "java.lang.AssertionError: two and two expected:<5> but was:<4>",
                ),
                failure(
                    "com.example.calc.CalcTest.divides",
                    "/tmp/mvnmm/calc/src/test/java/com/example/calc/CalcTest.java",
                    21,
                    "java.lang.ArithmeticException: / by zero",
                ),
                failure(
                    "com.example.strings.ShoutTest.shoutsWrong",
                    "/tmp/mvnmm/strings/src/test/java/com/example/strings/ShoutTest.java",
                    16,
                    "org.opentest4j.AssertionFailedError: an exclamation mark ==> expected: <HI!> but was: <HI>",
                ),
                failure(
                    "com.example.strings.ShoutTest$Empty.isEmpty",
                    "/tmp/mvnmm/strings/src/test/java/com/example/strings/ShoutTest.java",
                    23,
                    "org.opentest4j.AssertionFailedError: expected: <1> but was: <0>",
                ),
            ],
        );
    }

    #[test]
    fn re_runs_are_reported_once_and_flaky_tests_not_at_all() {
        let report = parse(include_str!("samples/maven_rerun.txt"), None).unwrap();
        let file = "/tmp/mvnfix/src/test/java/com/example/CalcTest.java";
        assert_complete(
            &report,
            Runner::Maven,
            (2, 2, 0),
            &[
                failure(
                    "com.example.CalcTest.addsWrong",
                    file,
                    15,
                    "java.lang.AssertionError: two and two expected:<5> but was:<4>",
                ),
                failure(
                    "com.example.CalcTest.divides",
                    file,
                    20,
                    "java.lang.ArithmeticException: / by zero",
                ),
            ],
        );
    }

    #[test]
    fn surefire_3_output_is_read() {
        let report = parse(include_str!("samples/maven_surefire3.txt"), None).unwrap();
        let dir = r"D:\a\shop\shop\cart\src\test\java\com\shop\cart";
        assert_complete(
            &report,
            Runner::Maven,
            (5, 3, 1),
            &[
                failure(
                    "com.shop.cart.CartTest.totalsPrices",
                    &format!(r"{dir}\CartTest.java"),
                    31,
                    "org.opentest4j.AssertionFailedError: total ==> expected: <30> but was: <20>",
                ),
                failure(
                    "com.shop.cart.CartTest.rejectsNegative",
                    &format!(r"{dir}\CartTest.java"),
                    44,
                    "java.lang.NullPointerException: Cannot invoke \"com.shop.cart.Item.price()\" because \"item\" is null",
                ),
                failure(
                    "com.shop.cart.DiscountTest.appliesCode",
                    &format!(r"{dir}\DiscountTest.java"),
                    18,
                    "org.opentest4j.AssertionFailedError: expected: <true> but was: <false>",
                ),
            ],
        );
    }

    #[test]
    fn without_blocks_the_results_lists_name_the_failures() {
        let output = "[INFO] Running com.example.CalcTest\n\
                      [ERROR] Tests run: 3, Failures: 1, Errors: 1, Skipped: 0, Time elapsed: 0.1 s <<< FAILURE! - in com.example.CalcTest\n\
                      [INFO] \n[INFO] Results:\n[INFO] \n\
                      [ERROR] Failures: \n\
                      [ERROR]   CalcTest.addsWrong:15 two and two expected:<5> but was:<4>\n\
                      [ERROR] Errors: \n\
                      [ERROR]   CalcTest.divides:20->Calc.div:9 » Arithmetic / by zero\n\
                      [INFO] \n\
                      [ERROR] Tests run: 3, Failures: 1, Errors: 1, Skipped: 0\n";
        let report = parse(output, None).unwrap();
        let mut added = unplaced("com.example.CalcTest.addsWrong", "two and two expected:<5> but was:<4>");
        added.line = Some(15);
        let mut divides = unplaced("com.example.CalcTest.divides", "Arithmetic / by zero");
        divides.line = Some(20);
        assert_complete(&report, Runner::Maven, (1, 2, 0), &[added, divides]);
    }

    #[test]
    fn old_surefire_output_without_levels_is_read() {
        let output = "-------------------------------------------------------\n T E S T S\n\
                      -------------------------------------------------------\n\
                      Running com.example.CalcTest\n\
                      Tests run: 2, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.05 sec <<< FAILURE!\n\
                      addsWrong(com.example.CalcTest)  Time elapsed: 0.01 sec  <<< FAILURE!\n\
                      java.lang.AssertionError: expected:<5> but was:<4>\n\
                      \tat org.junit.Assert.fail(Assert.java:88)\n\
                      \tat com.example.CalcTest.addsWrong(CalcTest.java:15)\n\n\
                      Results :\n\n\
                      Failed tests:   addsWrong(com.example.CalcTest): expected:<5> but was:<4>\n\n\
                      Tests run: 2, Failures: 1, Errors: 0, Skipped: 0\n";
        let report = parse(output, None).unwrap();
        assert_complete(
            &report,
            Runner::Maven,
            (1, 1, 0),
            &[failure(
                "com.example.CalcTest.addsWrong",
                "CalcTest.java",
                15,
                "java.lang.AssertionError: expected:<5> but was:<4>",
            )],
        );
    }

    #[test]
    fn a_log_cut_before_the_totals_is_incomplete() {
        let full = include_str!("samples/maven_multimodule.txt");
        let cut = &full[..full.find("[INFO] Results:").unwrap()];
        let report = parse(cut, None).unwrap();
        assert!(!report.complete);
        assert_eq!((report.passed, report.failed, report.skipped), (1, 2, 1));
        assert_eq!(report.failures.len(), 2);
        // Nothing names the module's directory yet: the frame's file name it is.
        assert_eq!(report.failures[0].file.as_deref(), Some("CalcTest.java"));
    }

    #[test]
    fn lines_are_recognised() {
        assert!(is_marker("[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0"));
        assert!(is_marker("[INFO]  T E S T S"));
        assert!(is_marker("[ERROR] com.example.A.b -- Time elapsed: 0.01 s <<< ERROR!"));
        assert!(!is_marker("Tests run: many"));
        assert!(!is_marker("[INFO] BUILD FAILURE"));
        assert_eq!(
            module_dir("Please refer to /w/a/target/surefire-reports for the individual test results."),
            Some("/w/a")
        );
        assert_eq!(
            module_dir(r"Please refer to D:\a\r\r\target\failsafe-reports for the individual test results."),
            Some(r"D:\a\r\r")
        );
        assert_eq!(
            module_dir("Please refer to /w/a/build/reports for the individual test results."),
            None
        );
        let f = frame("\tat java.base/java.lang.reflect.Method.invoke(Method.java:569)").unwrap();
        assert_eq!(
            (f.class, f.method, f.file, f.line),
            ("java.lang.reflect.Method", "invoke", "Method.java", 569)
        );
        assert!(frame("\tat jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)").is_none());
    }
}
