//! Triage of real failure output: `cargo test`, `rustc`, `javac`, pytest, Maven (failing tests
//! and compile errors) and `go test` run on tiny failing projects, their output wrapped in the
//! Actions log format, and signature samples for each class. javac, Maven and Go are skipped,
//! saying so, only where `javac`, `mvn` or `go` is not installed.
#![expect(clippy::unwrap_used, reason = "tests")]

use std::path::Path;
use std::process::Command;

use pitcrew_tests::ci_log::{actions_log, failing_output as output_of};

use super::*;

/// The findings without the log lines that show them (checked on their own).
fn unplaced(findings: &[Finding]) -> Vec<Finding> {
    findings
        .iter()
        .map(|f| Finding {
            evidence: Vec::new(),
            ..f.clone()
        })
        .collect()
}

/// Writes `files` into a fresh temporary directory.
fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, contents) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
    dir
}

/// False, with the reason printed, when `program` is not installed: its tests are skipped.
fn installed(program: &str, version_arg: &str) -> bool {
    match Command::new(program).arg(version_arg).output() {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            println!("skipped: `{program}` is not installed");
            false
        }
        _ => true,
    }
}

#[test]
fn a_failing_cargo_test_is_a_code_failure_at_its_assertion() {
    let dir = project(&[
        (
            "Cargo.toml",
            "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
        ),
        (
            "src/lib.rs",
            "pub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    \
             fn adds() {\n        assert_eq!(super::add(2, 2), 4);\n    }\n\n    #[test]\n    fn adds_wrong() {\n        \
             assert_eq!(super::add(2, 2), 5, \"two and two\");\n    }\n}\n",
        ),
    ]);
    let target = dir.path().join("target");
    let output = output_of(
        dir.path(),
        "cargo test --offline",
        &[
            ("CARGO_TARGET_DIR", target.to_str().unwrap()),
            ("CARGO_TERM_COLOR", "always"),
        ],
    );
    let analysis = analyse(&actions_log("cargo test --offline", &output, 101));
    assert_eq!(analysis.step.as_deref(), Some("Run cargo test --offline"));
    assert_eq!(
        unplaced(&analysis.findings),
        [Finding {
            kind: FindingKind::TestFailure,
            runner: Some(Runner::Cargo),
            compiler: None,
            test: Some("tests::adds_wrong".into()),
            file: Some("src/lib.rs".into()),
            line: Some(14),
            message: "assertion `left == right` failed: two and two\n  left: 4\n right: 5".into(),
            attempts: 1,
            evidence: Vec::new(),
        }]
    );
    assert_eq!(analysis.classification.class, Class::Code);
    assert_eq!(
        analysis.classification.reasons,
        ["1 failing test(s) in `Run cargo test --offline`"]
    );
    assert!(!analysis.excerpt.contains('\u{1b}') && !analysis.excerpt.contains("2026-11-30T08:00"));
    assert!(
        analysis.excerpt.contains("test result: FAILED."),
        "{}",
        analysis.excerpt
    );
    assert!(!analysis.excerpt.contains("Operating System"));
}

#[test]
fn a_rustc_type_error_is_a_compile_error_at_its_line() {
    let dir = project(&[(
        "bad.rs",
        "pub fn answer() -> u32 {\n    let x = 1;\n    \"forty-two\"\n}\n",
    )]);
    let output = output_of(
        dir.path(),
        "rustc --edition 2021 --crate-type lib --color always bad.rs",
        &[],
    );
    let analysis = analyse(&actions_log("rustc bad.rs", &output, 1));
    assert_eq!(
        unplaced(&analysis.findings),
        [Finding {
            kind: FindingKind::CompileError,
            runner: None,
            compiler: Some(Compiler::Rustc),
            test: None,
            file: Some("bad.rs".into()),
            line: Some(3),
            message: "error[E0308]: mismatched types".into(),
            attempts: 1,
            evidence: Vec::new(),
        }]
    );
    assert_eq!(analysis.classification.class, Class::Code);
    assert_eq!(analysis.classification.confidence, 0.9);
}

/// A class with two errors javac reports (one with a `symbol:` detail) and lint warnings.
const BROKEN_CALC: &str = "package com.example;

import java.util.ArrayList;
import java.util.List;

public class Calc {
    public static int add(int a, int b) {
        return a + y;
    }

    public static String name() {
        return 42;
    }

    public static List<String> names() {
        List raw = new ArrayList();
        return raw;
    }

    public static Integer boxed() {
        return new Integer(1);
    }
}
";

/// A compile error javac found.
fn javac_error(file: &str, line: u32, message: &str) -> Finding {
    Finding {
        kind: FindingKind::CompileError,
        runner: None,
        compiler: Some(Compiler::Javac),
        test: None,
        file: Some(file.into()),
        line: Some(line),
        message: message.into(),
        attempts: 1,
        evidence: Vec::new(),
    }
}

#[test]
fn javac_errors_are_compile_errors_at_their_lines_with_their_symbol() {
    if !installed("javac", "-version") {
        return;
    }
    let dir = project(&[("src/main/java/com/example/Calc.java", BROKEN_CALC)]);
    let command = "javac -Xlint:all -d out src/main/java/com/example/Calc.java";
    let output = output_of(dir.path(), command, &[]);
    assert!(output.contains(": warning: [rawtypes]"), "{output}");
    let analysis = analyse(&actions_log(command, &output, 1));
    let file = "src/main/java/com/example/Calc.java";
    assert_eq!(
        unplaced(&analysis.findings),
        [
            javac_error(file, 8, "error: cannot find symbol\nsymbol:   variable y"),
            javac_error(file, 12, "error: incompatible types: int cannot be converted to String"),
        ]
    );
    assert_eq!(analysis.classification.class, Class::Code);
    assert_eq!(
        analysis.classification.reasons,
        [format!("2 compile error(s) in `Run {command}`")]
    );
}

#[test]
fn a_failing_pytest_is_a_code_failure_at_its_assertion() {
    let dir = project(&[(
        "test_calc.py",
        "def add(a, b):\n    return a + b\n\n\ndef test_adds():\n    assert add(1, 1) == 2\n\n\n\
         def test_adds_wrong():\n    assert add(2, 2) == 5\n",
    )]);
    let output = output_of(
        dir.path(),
        "python3 -m pytest -q -rA --color=yes -p no:cacheprovider",
        &[],
    );
    let analysis = analyse(&actions_log("python3 -m pytest", &output, 1));
    assert_eq!(
        unplaced(&analysis.findings),
        [Finding {
            kind: FindingKind::TestFailure,
            runner: Some(Runner::Pytest),
            compiler: None,
            test: Some("test_calc.py::test_adds_wrong".into()),
            file: Some("test_calc.py".into()),
            line: Some(10),
            message: "assert 4 == 5\n+  where 4 = add(2, 2)".into(),
            attempts: 1,
            evidence: Vec::new(),
        }]
    );
    assert_eq!(analysis.classification.class, Class::Code);
}

#[test]
fn a_connection_reset_while_testing_is_flaky() {
    let log = actions_log(
        "cargo test",
        "running 1 test\ntest fetches_page ... FAILED\n\nfailures:\n\n---- fetches_page stdout ----\n\
         thread 'fetches_page' panicked at tests/http.rs:12:5:\nrequest failed: Connection reset by peer (os error 104)\n\n\
         failures:\n    fetches_page\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; \
         finished in 0.20s\n",
        101,
    );
    let analysis = analyse(&log);
    assert_eq!(analysis.findings.len(), 1);
    assert_eq!(analysis.findings[0].file.as_deref(), Some("tests/http.rs"));
    let c = &analysis.classification;
    assert_eq!(c.class, Class::Flaky);
    assert!((0.5..0.8).contains(&c.confidence), "{c:?}");
    assert_eq!(
        c.reasons,
        [
            "a connection was reset in `Run cargo test`: request failed: Connection reset by peer (os error 104)",
            "1 failing test(s), which may be the same network trouble",
        ]
    );
}

#[test]
fn out_of_disk_and_a_runner_shutdown_are_infrastructure() {
    let disk = analyse(&actions_log(
        "cargo build",
        "   Compiling serde v1.0.200\nerror: failed to write /home/runner/work/x/x/target/debug/deps/libserde.rlib: \
         No space left on device (os error 28)\n",
        101,
    ));
    assert_eq!(disk.classification.class, Class::Infrastructure);
    assert_eq!(disk.classification.confidence, 0.95);
    assert!(
        disk.classification.reasons[0].starts_with("the runner ran out of disk space in `Run cargo build`"),
        "{:?}",
        disk.classification
    );

    // A runner that is shut down mid-test leaves test output without a verdict and no marker.
    let shutdown = "2024-05-01T12:00:00.0000000Z ##[group]Run cargo test\n\
                    2024-05-01T12:00:01.0000000Z running 40 tests\n\
                    2024-05-01T12:00:01.0000000Z test a ... ok\n\
                    2024-05-01T12:09:00.0000000Z ##[error]The runner has received a shutdown signal. This can happen \
                    when the runner service is stopped, or a manually started runner is canceled.\n\
                    2024-05-01T12:09:00.0000000Z ##[error]The operation was canceled.\n";
    let analysis = analyse(shutdown);
    assert_eq!(analysis.classification.class, Class::Infrastructure);
    assert!(analysis.classification.reasons[0].starts_with("the runner was shut down during the job"));
    assert!(analysis.findings.iter().all(|f| f.kind != FindingKind::TestFailure));
}

#[test]
fn a_missing_secret_is_configuration() {
    let log = actions_log(
        "aws-actions/configure-aws-credentials@v4",
        "Error: Input required and not supplied: aws-region\n",
        1,
    );
    let analysis = analyse(&log);
    assert_eq!(analysis.classification.class, Class::Configuration);
    assert_eq!(analysis.classification.confidence, 0.9);
    let named = analyse(&actions_log(
        "./deploy.sh",
        "deploy: the DEPLOY_TOKEN secret is not set\n",
        1,
    ));
    assert_eq!(named.classification.class, Class::Configuration);
    assert_eq!(named.classification.reasons.len(), 1);
}

#[test]
fn unrecognised_output_keeps_the_lines_around_its_first_error() {
    let output: String = (1..=20)
        .map(|i| match i {
            10 => "make: *** [Makefile:3: all] Error 2\n".to_owned(),
            _ => format!("step {i}\n"),
        })
        .collect();
    let analysis = analyse(&actions_log("make", &output, 2));
    assert_eq!(analysis.findings.len(), 1);
    let finding = &analysis.findings[0];
    assert_eq!(finding.kind, FindingKind::Generic);
    assert_eq!(
        finding.message,
        "step 7\nstep 8\nstep 9\nmake: *** [Makefile:3: all] Error 2\nstep 11\nstep 12\nstep 13\nstep 14\nstep 15\n\
         step 16\nstep 17\nstep 18"
    );
    assert_eq!(analysis.classification.class, Class::Unknown);
    assert!(
        analysis
            .render_text()
            .starts_with("classification: unknown (confidence 0.20)\n")
    );
}

#[test]
fn runner_checkout_paths_become_relative() {
    assert_eq!(relative("/home/runner/work/pitcrew/pitcrew/src/lib.rs"), "src/lib.rs");
    assert_eq!(relative("/Users/runner/work/a/a/x.c"), "x.c");
    assert_eq!(relative("/home/runner/work/a"), "/home/runner/work/a");
    assert_eq!(relative("src/lib.rs"), "src/lib.rs");
}

/// Maven's settings for a build from Debian's packaged Maven repository, offline: `central` is
/// `/usr/share/maven-repo` (which has no checksums).
const MAVEN_SETTINGS: &str = "<settings>
  <profiles>
    <profile>
      <id>debian</id>
      <repositories>
        <repository>
          <id>central</id>
          <url>file:///usr/share/maven-repo</url>
          <releases><checksumPolicy>ignore</checksumPolicy></releases>
          <snapshots><enabled>false</enabled></snapshots>
        </repository>
      </repositories>
      <pluginRepositories>
        <pluginRepository>
          <id>central</id>
          <url>file:///usr/share/maven-repo</url>
          <releases><checksumPolicy>ignore</checksumPolicy></releases>
          <snapshots><enabled>false</enabled></snapshots>
        </pluginRepository>
      </pluginRepositories>
    </profile>
  </profiles>
  <activeProfiles><activeProfile>debian</activeProfile></activeProfiles>
</settings>
";

/// A one-module project whose plugins are the versions Debian packages (libsurefire-java,
/// libmaven-compiler-plugin-java, libmaven-resources-plugin-java, junit4).
const MAVEN_POM: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example</groupId>
  <artifactId>calc</artifactId>
  <version>1.0</version>
  <properties>
    <maven.compiler.source>17</maven.compiler.source>
    <maven.compiler.target>17</maven.compiler.target>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency><groupId>junit</groupId><artifactId>junit</artifactId><version>4.13.2</version><scope>test</scope></dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.3.0</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.10.1</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-surefire-plugin</artifactId><version>2.22.3</version></plugin>
    </plugins>
  </build>
</project>
"#;

/// What Maven needs here, for a failure that says so.
const MAVEN_PACKAGES: &str = "are maven, openjdk-17-jdk-headless, libsurefire-java, junit4, \
                              libmaven-compiler-plugin-java and libmaven-resources-plugin-java installed?";

/// A Maven project of [`MAVEN_POM`] and [`MAVEN_SETTINGS`] with `sources` in it.
fn maven_project(sources: &[(&str, &str)]) -> tempfile::TempDir {
    let mut files = vec![("pom.xml", MAVEN_POM), ("settings.xml", MAVEN_SETTINGS)];
    files.extend_from_slice(sources);
    project(&files)
}

/// Maven's output of `args` (goals and properties) on the project in `dir`, which it was meant to
/// fail: offline, from Debian's packaged repository, into a local repository of the project's own.
fn maven(dir: &Path, args: &str) -> String {
    let command = format!(
        "mvn -B -ntp -o -Daether.offline.protocols=file -s settings.xml -Dmaven.repo.local={} {args}",
        dir.join("m2").display()
    );
    output_of(dir, &command, &[])
}

#[test]
fn a_failing_maven_build_is_a_code_failure_at_its_tests() {
    if !installed("mvn", "-v") {
        return;
    }
    let dir = maven_project(&[
        (
            "src/main/java/com/example/Calc.java",
            "package com.example;\n\npublic class Calc {\n    public static int add(int a, int b) {\n        \
             return a + b;\n    }\n\n    public static int div(int a, int b) {\n        return a / b;\n    }\n}\n",
        ),
        (
            "src/test/java/com/example/CalcTest.java",
            "package com.example;\n\nimport static org.junit.Assert.assertEquals;\n\nimport org.junit.Test;\n\n\
             public class CalcTest {\n    @Test\n    public void adds() {\n        assertEquals(4, Calc.add(2, 2));\n    \
             }\n\n    @Test\n    public void addsWrong() {\n        assertEquals(\"two and two\", 5, Calc.add(2, 2));\n    \
             }\n\n    @Test\n    public void divides() {\n        assertEquals(0, Calc.div(1, 0));\n    }\n}\n",
        ),
    ]);
    let output = maven(dir.path(), "test");
    assert!(
        output.contains("T E S T S"),
        "Maven did not run the tests: {MAVEN_PACKAGES}\n{output}"
    );
    let mut analysis = analyse(&actions_log("mvn -B -ntp test", &output, 1));
    assert_eq!(analysis.step.as_deref(), Some("Run mvn -B -ntp test"));
    // Maven runs in the real directory, and the test's file is derived from the module's directory
    // that `Please refer to …/target/surefire-reports` names.
    let module = dir.path().canonicalize().unwrap();
    let file = format!("{}/src/test/java/com/example/CalcTest.java", module.display());
    let finding = |test: &str, file: &str, line: u32, message: &str| Finding {
        kind: FindingKind::TestFailure,
        runner: Some(Runner::Maven),
        compiler: None,
        test: Some(test.into()),
        file: Some(file.into()),
        line: Some(line),
        message: message.into(),
        attempts: 1,
        evidence: Vec::new(),
    };
    assert_eq!(
        unplaced(&analysis.findings),
        [
            finding(
                "com.example.CalcTest.addsWrong",
                &file,
                15,
                "java.lang.AssertionError: two and two expected:<5> but was:<4>"
            ),
            finding(
                "com.example.CalcTest.divides",
                &file,
                20,
                "java.lang.ArithmeticException: / by zero"
            ),
        ]
    );
    assert_eq!(analysis.classification.class, Class::Code);
    assert_eq!(
        analysis.classification.reasons,
        ["2 failing test(s) in `Run mvn -B -ntp test`"]
    );

    // Against the checkout, the module's absolute directory goes.
    assert_eq!(paths::resolve(&mut analysis.findings, dir.path()), 2);
    let relative = "src/test/java/com/example/CalcTest.java";
    assert_eq!(analysis.findings[0].file.as_deref(), Some(relative));
    assert_eq!(analysis.findings[1].file.as_deref(), Some(relative));
    assert_eq!(
        paths::source_line(dir.path(), relative, 15).as_deref(),
        Some("        assertEquals(\"two and two\", 5, Calc.add(2, 2));")
    );
}

#[test]
fn a_maven_compile_failure_is_one_finding_per_javac_error() {
    if !installed("mvn", "-v") {
        return;
    }
    let calc = "src/main/java/com/example/Calc.java";
    let calc_test = "src/test/java/com/example/CalcTest.java";
    let dir = maven_project(&[(calc, BROKEN_CALC)]);
    let module = dir.path().canonicalize().unwrap();
    let output = maven(dir.path(), "-Dmaven.compiler.showWarnings=true test");
    assert!(output.contains("COMPILATION ERROR"), "{MAVEN_PACKAGES}\n{output}");
    // Both blocks print each error, and the warnings are printed too.
    let absolute = format!("{}/{calc}", module.display());
    assert_eq!(
        output.matches(&format!("{absolute}:[8,20] cannot find symbol")).count(),
        2,
        "{output}"
    );
    assert!(output.contains(&format!("[WARNING] {absolute}:[")), "{output}");
    let mut analysis = analyse(&actions_log("mvn -B -ntp test", &output, 1));
    assert_eq!(
        unplaced(&analysis.findings),
        [
            javac_error(&absolute, 8, "cannot find symbol\nsymbol:   variable y"),
            javac_error(
                &absolute,
                12,
                "incompatible types: int cannot be converted to java.lang.String"
            ),
        ]
    );
    assert_eq!(analysis.classification.class, Class::Code);
    assert_eq!(
        analysis.classification.reasons,
        ["2 compile error(s) in `Run mvn -B -ntp test`"]
    );
    assert_eq!(paths::resolve(&mut analysis.findings, dir.path()), 2);
    assert_eq!(analysis.findings[0].file.as_deref(), Some(calc));

    // A test that does not compile: Surefire never runs, so the error is the only finding.
    std::fs::write(
        dir.path().join(calc),
        "package com.example;\n\npublic class Calc {\n    public static int add(int a, int b) {\n        \
         return a + b;\n    }\n}\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("src/test/java/com/example")).unwrap();
    std::fs::write(
        dir.path().join(calc_test),
        "package com.example;\n\nimport static org.junit.Assert.assertEquals;\n\nimport org.junit.Test;\n\n\
         public class CalcTest {\n    @Test\n    public void adds() {\n        assertEquals(4, Calc.add(2, 2, 0));\n    \
         }\n}\n",
    )
    .unwrap();
    let output = maven(dir.path(), "test");
    assert!(
        output.contains("COMPILATION ERROR") && !output.contains("T E S T S"),
        "{output}"
    );
    let analysis = analyse(&actions_log("mvn -B -ntp test", &output, 1));
    assert_eq!(
        unplaced(&analysis.findings),
        [javac_error(
            &format!("{}/{calc_test}", module.display()),
            10,
            "method add in class com.example.Calc cannot be applied to given types;"
        )]
    );
    assert_eq!(analysis.classification.class, Class::Code);
}

#[test]
fn a_runners_checkout_prefix_is_taken_off_mavens_javac_errors() {
    let text = "[ERROR] /home/runner/work/shop/shop/cart/src/main/java/com/shop/Cart.java:[8,20] cannot find symbol\n\
                [ERROR]   symbol:   variable y\n\
                [ERROR]   location: class com.shop.Cart\n";
    assert_eq!(
        findings(text),
        [javac_error(
            "cart/src/main/java/com/shop/Cart.java",
            8,
            "cannot find symbol\nsymbol:   variable y"
        )]
    );
}

#[test]
fn a_failing_go_test_is_a_code_failure_at_its_assertion_and_panic() {
    if !installed("go", "version") {
        return;
    }
    let dir = project(&[
        ("go.mod", "module example.com/calc\n\ngo 1.19\n"),
        (
            "calc.go",
            "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\nfunc Div(a, b int) int {\n\treturn a / b\n}\n",
        ),
        (
            "calc_test.go",
            "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 2); got != 4 {\n\t\t\
             t.Errorf(\"Add(2, 2) = %d, want 4\", got)\n\t}\n}\n\nfunc TestAddWrong(t *testing.T) {\n\tif got := Add(2, 2); \
             got != 5 {\n\t\tt.Errorf(\"Add(2, 2) = %d, want 5\", got)\n\t}\n}\n\nfunc TestDiv(t *testing.T) {\n\tif got := \
             Div(1, 0); got != 0 {\n\t\tt.Errorf(\"Div(1, 0) = %d\", got)\n\t}\n}\n",
        ),
    ]);
    // No module is downloaded, nor a newer toolchain.
    let output = output_of(
        dir.path(),
        "go test ./...",
        &[("GOPROXY", "off"), ("GOTOOLCHAIN", "local"), ("GOFLAGS", "")],
    );
    let mut analysis = analyse(&actions_log("go test ./...", &output, 1));
    let finding = |test: &str, file: &str, line: u32, message: &str| Finding {
        kind: FindingKind::TestFailure,
        runner: Some(Runner::GoTest),
        compiler: None,
        test: Some(test.into()),
        file: Some(file.into()),
        line: Some(line),
        message: message.into(),
        attempts: 1,
        evidence: Vec::new(),
    };
    // `t.Errorf` lines name the file only; a panic's frame is absolute.
    let calc = format!("{}/calc.go", dir.path().canonicalize().unwrap().display());
    assert_eq!(
        unplaced(&analysis.findings),
        [
            finding("TestAddWrong", "calc_test.go", 13, "Add(2, 2) = 4, want 5"),
            finding("TestDiv", &calc, 8, "panic: runtime error: integer divide by zero"),
        ]
    );
    assert_eq!(analysis.classification.class, Class::Code);
    assert_eq!(paths::resolve(&mut analysis.findings, dir.path()), 2);
    assert_eq!(analysis.findings[1].file.as_deref(), Some("calc.go"));
    assert_eq!(
        paths::source_line(dir.path(), "calc.go", 8).as_deref(),
        Some("\treturn a / b")
    );
}

#[test]
fn a_windows_runners_maven_paths_resolve_against_the_checkout() {
    // The Surefire 3 sample is written by hand (see testparse/samples/README.md): Maven 3.9 is not
    // packaged here.
    let output = include_str!("../testparse/samples/maven_surefire3.txt");
    let mut analysis = analyse(&actions_log("mvn -B verify", output, 1));
    assert_eq!(analysis.findings.len(), 3);
    assert_eq!(
        analysis.findings[0].file.as_deref(),
        Some(r"D:\a\shop\shop\cart\src\test\java\com\shop\cart\CartTest.java")
    );
    let checkout = project(&[
        ("cart/src/test/java/com/shop/cart/CartTest.java", "class CartTest {}\n"),
        (
            "cart/src/test/java/com/shop/cart/DiscountTest.java",
            "class DiscountTest {}\n",
        ),
    ]);
    assert_eq!(paths::resolve(&mut analysis.findings, checkout.path()), 3);
    let files: Vec<&str> = analysis.findings.iter().filter_map(|f| f.file.as_deref()).collect();
    assert_eq!(
        files,
        [
            "cart/src/test/java/com/shop/cart/CartTest.java",
            "cart/src/test/java/com/shop/cart/CartTest.java",
            "cart/src/test/java/com/shop/cart/DiscountTest.java",
        ]
    );
}

#[test]
fn a_test_reported_by_each_rerun_is_one_finding_with_its_attempts_and_its_lines() {
    let log = "##[group]Run pytest --reruns 2\n\
               tests/test_net.py::test_fetch RERUN\n\
               tests/test_net.py::test_fetch RERUN\n\
               tests/test_net.py::test_fetch FAILED\n\
               =========================== short test summary info ============================\n\
               FAILED tests/test_net.py::test_fetch - assert 500 == 200\n\
               ==================== 1 failed, 3 passed, 2 rerun in 1.20s =====================\n\
               ##[error]Process completed with exit code 1.\n";
    let analysis = analyse(log);
    let fetch: Vec<&Finding> = analysis
        .findings
        .iter()
        .filter(|f| f.test.as_deref() == Some("tests/test_net.py::test_fetch"))
        .collect();
    assert_eq!(fetch.len(), 1, "{:#?}", analysis.findings);
    assert!(!fetch[0].evidence.is_empty());
    // The evidence is lines of the log as given (1-based, the step header is line 1).
    let lines: Vec<&str> = log.lines().collect();
    for n in &fetch[0].evidence {
        assert!(lines[n - 1].contains("test_fetch"), "line {n}: {}", lines[n - 1]);
    }
    assert_eq!(analysis.classification.class, Class::Code);
}

#[test]
fn a_skipped_tests_name_says_nothing_about_the_failure() {
    // vitest's tree, as in the sample of its real output (testparse/samples/vitest.txt).
    let output = "\n RUN  v3.2.4 /home/runner/work/app/app\n\n \
                  ✓ src/config.test.ts (1 test) 2ms\n \
                  ❯ src/webhook.test.ts (2 tests | 1 failed | 1 skipped) 14ms\n   \
                  ↓ webhook > fails without the missing webhook secret\n   \
                  × webhook > adds 12ms\n     → expected 3 to be 4\n\n \
                  Test Files  1 failed | 1 passed (2)\n      Tests  1 failed | 1 passed | 1 skipped (3)\n";
    let analysis = analyse(&actions_log("npx vitest run", output, 1));
    // The failing test is the finding and the code is to blame; the skipped one is neither.
    assert_eq!(
        analysis.classification.class,
        Class::Code,
        "{:?}",
        analysis.classification
    );
    let tests: Vec<Option<&str>> = analysis.findings.iter().map(|f| f.test.as_deref()).collect();
    assert_eq!(tests.len(), 1, "{:#?}", analysis.findings);
    assert!(
        tests[0].is_some_and(|t| t.ends_with("adds")),
        "{:#?}",
        analysis.findings
    );
}

#[test]
fn where_a_network_failure_happened_decides_its_class() {
    let dns = analyse(&actions_log(
        "pip install -r requirements.txt",
        "Collecting requests\n  WARNING: Retrying (Retry(total=4)) after connection broken by \
         'NewConnectionError(': Failed to establish a new connection: [Errno -3] Temporary failure in name \
         resolution')': /simple/requests/\nERROR: Could not find a version that satisfies the requirement requests\n",
        1,
    ));
    assert_eq!(
        dns.classification.class,
        Class::Infrastructure,
        "{:?}",
        dns.classification
    );
    // A test's own timeout is the code's, not the network's.
    let own = analyse(&actions_log(
        "cargo test",
        "running 1 test\ntest waits ... FAILED\n\nfailures:\n\n---- waits stdout ----\nthread 'waits' panicked at \
         src/lib.rs:9:5:\ntimed out waiting for the worker\n\nfailures:\n    waits\n\ntest result: FAILED. 0 passed; 1 \
         failed; 0 ignored; 0 measured; 0 filtered out; finished in 5.00s\n",
        101,
    ));
    assert_eq!(own.classification.class, Class::Code, "{:?}", own.classification);
}

#[test]
fn missing_images_credentials_and_tools_are_configuration_with_their_line_as_a_finding() {
    for (step, output, decisive) in [
        (
            "docker run ghcr.io/acme/builder:2.9",
            "Unable to find image 'ghcr.io/acme/builder:2.9' locally\ndocker: Error response from daemon: manifest \
             unknown.\nSee 'docker run --help'.\n",
            "manifest unknown",
        ),
        (
            "aws s3 sync dist s3://acme-site",
            "upload failed: dist/index.html to s3://acme-site/index.html Unable to locate credentials\n",
            "Unable to locate credentials",
        ),
        (
            "cmake -B build",
            "-- Looking for pthread.h - found\nCMake Error at CMakeLists.txt:12 (find_package):\n  Could NOT find \
             OpenSSL, try to set the path to OpenSSL root folder (missing: OPENSSL_CRYPTO_LIBRARY) (found version \
             \"3.0.2\")\n-- Configuring incomplete, errors occurred!\n",
            "Could NOT find OpenSSL",
        ),
    ] {
        let analysis = analyse(&actions_log(step, output, 1));
        assert_eq!(
            analysis.classification.class,
            Class::Configuration,
            "{step}: {:?}",
            analysis.classification
        );
        assert!(!analysis.classification.evidence.is_empty(), "{step}");
        assert!(
            analysis.findings.iter().any(|f| f.message.contains(decisive)),
            "{step}: {:#?}",
            analysis.findings
        );
    }
}

// ---- The failing step (issue 16, item 5): which step `analyse` names, on real logs. ----

/// A log of the triage corpus (`tests/fixtures/ci-logs/`), with its source in the `.toml` beside
/// it.
macro_rules! corpus_log {
    ($name:literal) => {
        include_str!(concat!("../../../tests/fixtures/ci-logs/", $name, ".log"))
    };
}

#[test]
fn output_without_step_headers_names_no_step() {
    for raw in [
        corpus_log!("flaky-linkerd-proxy-connection-reset"),
        corpus_log!("infra-libcfgraph-circleci-killed"),
        corpus_log!("infra-buildkite-pipeline-upload-stuck"),
        corpus_log!("config-substrate-gitlab-image-manifest-unknown"),
    ] {
        let analysis = analyse(raw);
        assert_eq!(analysis.step, None, "{}", analysis.excerpt);
        assert!(!analysis.excerpt.is_empty());
    }
}

#[test]
fn the_step_named_is_the_one_the_runners_hook_wrapped() {
    let analysis = analyse(corpus_log!("config-pytorch-aws-credentials"));
    assert_eq!(
        analysis.step.as_deref(),
        Some("Run aws-actions/configure-aws-credentials@8df5847569e6427dd6c4fb1cf565c83acfa8afa7")
    );
    assert!(
        analysis
            .excerpt
            .contains("Could not load credentials from any providers")
    );
}

/// Actions steps around real output: each `(command, output, exit code)` as its own step.
fn steps_log(steps: &[(&str, &str, i32)]) -> String {
    let mut lines = vec!["Current runner version: '2.321.0'".to_owned()];
    for (command, output, code) in steps {
        lines.push(format!("##[group]Run {command}"));
        lines.push((*command).to_owned());
        lines.push("##[endgroup]".into());
        lines.extend(output.lines().map(str::to_owned));
        lines.push(format!("##[error]Process completed with exit code {code}."));
    }
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| format!("2026-11-30T08:01:{:02}.{:07}Z {line}\n", i % 60, i * 1000))
        .collect()
}

#[test]
fn the_failing_step_is_the_last_one_whose_exit_ended_the_job_not_the_first_error() {
    let dir = project(&[("main.py", "import nonexistent_module_for_pitcrew\n")]);
    // A step allowed to fail (`continue-on-error`), then the one that failed the job.
    let allowed = output_of(dir.path(), "ls /nonexistent-pitcrew-dir", &[]);
    let failed = output_of(dir.path(), "python3 main.py", &[]);
    let analysis = analyse(&steps_log(&[
        ("ls /nonexistent-pitcrew-dir", &allowed, 2),
        ("python3 main.py", &failed, 1),
    ]));
    assert_eq!(analysis.step.as_deref(), Some("Run python3 main.py"));
    assert!(analysis.excerpt.contains("ModuleNotFoundError"), "{}", analysis.excerpt);
    assert!(
        !analysis.excerpt.contains("nonexistent-pitcrew-dir'"),
        "{}",
        analysis.excerpt
    );
}
