//! The extraction on hand-made fixtures (`bot/tests/fixtures/index/`, one per language, with the
//! hard cases), asserted exactly: definitions, docs, references and their qualifiers, imports;
//! and bytes no parser likes.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::path::Path;

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/index")
        .join(name);
    std::fs::read(path).unwrap()
}

fn symbols(lang: Lang, file: &str) -> FileSymbols {
    extract(lang, &fixture(file)).unwrap()
}

/// One line per definition: `kind name container lines`.
fn outline(symbols: &FileSymbols) -> String {
    let lines: Vec<String> = symbols
        .definitions
        .iter()
        .map(|d| {
            let container = d.container.as_deref().unwrap_or("-");
            format!("{} {} {} {}-{}", d.kind, d.name, container, d.start_line, d.end_line)
        })
        .collect();
    lines.join("\n")
}

/// The definitions that have a doc line: `name: doc`.
fn docs(symbols: &FileSymbols) -> String {
    let lines: Vec<String> = symbols
        .definitions
        .iter()
        .filter_map(|d| Some(format!("{}: {}", d.name, d.doc.as_deref()?)))
        .collect();
    lines.join("\n")
}

fn signature<'a>(symbols: &'a FileSymbols, name: &str) -> &'a str {
    &symbols.definitions.iter().find(|d| d.name == name).unwrap().signature
}

/// Every reference to `name`: `line:column kind qualifier`.
fn refs(symbols: &FileSymbols, name: &str) -> Vec<String> {
    symbols
        .references
        .iter()
        .filter(|r| r.name == name)
        .map(|r| {
            let qualifier = r.qualifier.as_deref().unwrap_or("-");
            format!("{}:{} {} {}", r.line, r.column, r.kind.as_str(), qualifier)
        })
        .collect()
}

/// One line per import: `line path name alias`.
fn imports(symbols: &FileSymbols) -> String {
    let lines: Vec<String> = symbols
        .imports
        .iter()
        .map(|i| {
            let name = i.name.as_deref().unwrap_or("-");
            let alias = i.alias.as_deref().unwrap_or("-");
            format!("{} {} {} {}", i.line, i.path, name, alias)
        })
        .collect();
    lines.join("\n")
}

#[test]
fn rust_definitions() {
    let s = symbols(Lang::Rust, "sample.rs");
    insta::assert_snapshot!(outline(&s), @"
    constant GREETING - 9-9
    static COUNTER - 10-10
    type_alias Table - 11-11
    struct Point - 15-19
    field x Point 17-17
    field y Point 18-18
    struct Unit - 21-21
    struct Pair - 22-22
    enum Shape - 24-28
    enum_member Circle Shape 25-25
    field radius Shape::Circle 25-25
    enum_member Square Shape 26-26
    enum_member Empty Shape 27-27
    struct Bits - 30-33
    field int Bits 31-31
    field float Bits 32-32
    trait Area - 35-43
    type_alias Output Area 36-36
    constant SIDES Area 37-37
    method area Area 39-39
    method describe Area 40-42
    method new Point 46-48
    method map Point 50-55
    type_alias Output Shape 59-59
    constant SIDES Shape 60-60
    method area Shape 61-68
    method fmt Point 72-74
    macro square - 77-81
    module outer - 83-90
    module inner outer 84-88
    function deep outer::inner 85-87
    function shallow outer 89-89
    function helper - 92-98
    function abs - 101-101
    ");
    insta::assert_snapshot!(docs(&s), @"
    GREETING: The greeting, shouted.
    Point: A point on the plane.
    x: Across.
    area: The area.
    ");
    assert_eq!(signature(&s, "map"), "pub(crate) fn map<U, F: Fn(T) -> U>(");
    assert_eq!(
        signature(&s, "Table"),
        "pub(crate) type Table<K> = HashMap<K, Vec<u8>>;"
    );
}

#[test]
fn rust_references_and_imports() {
    let s = symbols(Lang::Rust, "sample.rs");
    // `helper()` in a comment and in a string is no reference; the call in `deep` is.
    assert_eq!(refs(&s, "helper"), ["86:27 call super::super"]);
    assert_eq!(refs(&s, "new"), ["54:16 call Point", "94:20 call Point"]);
    assert_eq!(refs(&s, "map"), ["95:15 call p"]);
    assert_eq!(refs(&s, "deep"), ["96:19 call outer::inner"]);
    assert_eq!(refs(&s, "len"), ["97:22 call s"]);
    assert_eq!(refs(&s, "square"), ["97:5 call -"]);
    assert_eq!(
        refs(&s, "x"),
        ["47:17 other -", "54:27 other self", "73:36 other -", "97:15 other -"]
    );
    assert_eq!(refs(&s, "Display"), ["71:11 type fmt"]);
    assert_eq!(refs(&s, "Empty"), ["66:20 other Shape"]);
    assert_eq!(refs(&s, "HashMap"), ["3:24 import -", "11:28 type -"]);
    // Parameters and `let` bindings are not references; their uses are.
    assert_eq!(refs(&s, "q"), ["97:13 other -"]);
    insta::assert_snapshot!(imports(&s), @"
    3 std::collections HashMap -
    3 std::collections BTreeMap Map
    4 std fmt -
    5 crate::config * -
    6 super - -
    6 super::other Thing -
    ");
}

#[test]
fn python_definitions() {
    let s = symbols(Lang::Python, "sample.py");
    insta::assert_snapshot!(outline(&s), @"
    constant MAX_SIZE - 10-10
    variable default_name - 11-11
    variable a - 12-12
    variable b - 12-12
    function helper - 15-22
    function fetch - 25-26
    function log - 29-30
    class Outer - 35-59
    field LIMIT Outer 38-38
    class Inner Outer 40-45
    method method Outer.Inner 41-42
    class Deepest Outer.Inner 44-45
    method __init__ Outer 47-49
    method build Outer 52-55
    function local Outer.build 53-54
    method ready Outer 58-59
    function twice - 65-65
    ");
    insta::assert_snapshot!(docs(&s), @"
    helper: Help with x.
    Outer: The outer class.
    ");
    assert_eq!(signature(&s, "ready"), "async def ready(self) -> bool:");
}

#[test]
fn python_references_and_imports() {
    let s = symbols(Lang::Python, "sample.py");
    assert_eq!(refs(&s, "helper"), ["26:18 call -", "64:5 call -"]);
    assert_eq!(refs(&s, "join"), ["22:20 call os.path"]);
    assert_eq!(refs(&s, "other"), ["7:41 import -", "42:25 call self"]);
    assert_eq!(refs(&s, "build"), ["63:11 call Outer"]);
    assert_eq!(refs(&s, "ready"), ["63:19 other Outer.build()"]);
    assert_eq!(refs(&s, "log"), ["33:2 call -", "34:2 call -"]);
    assert_eq!(refs(&s, "Base"), ["35:13 type -"]);
    assert_eq!(refs(&s, "int"), ["47:31 type -"]);
    // Inside an f-string's braces is code.
    assert_eq!(refs(&s, "MAX_SIZE"), ["64:32 other -"]);
    assert!(refs(&s, "self").is_empty());
    insta::assert_snapshot!(imports(&s), @"
    3 os - -
    4 os.path - osp
    4 sys - -
    5 collections OrderedDict OD
    5 collections defaultdict -
    6 . sibling -
    7 ..pkg.mod first -
    7 ..pkg.mod second other
    8 typing * -
    ");
}

#[test]
fn typescript_definitions() {
    let s = symbols(Lang::TypeScript, "sample.ts");
    insta::assert_snapshot!(outline(&s), @"
    constant MAX_SIZE - 10-10
    variable counter - 11-11
    function parse - 17-17
    function parse - 18-18
    function parse - 19-23
    function double - 25-25
    function triple - 26-28
    interface Shape - 30-33
    field sides Shape 31-31
    method area Shape 32-32
    type_alias Pair - 35-35
    enum Color - 37-40
    enum_member Red Color 38-38
    enum_member Green Color 39-39
    module Geometry - 42-50
    constant ORIGIN Geometry 43-43
    function distance Geometry 44-46
    module Inner Geometry 47-49
    class Deep Geometry.Inner 48-48
    class Base - 52-67
    field sides Base 53-53
    field count Base 54-54
    field #secret Base 55-55
    constructor constructor Base 56-58
    method area Base 59-59
    method label Base 60-62
    method describe Base 64-66
    class default - 69-75
    method run default 70-74
    function ambient - 77-77
    type_alias Options - 78-78
    field verbose Options 78-78
    method run Options 78-78
    function configure - 79-79
    ");
    insta::assert_snapshot!(docs(&s), @"
    MAX_SIZE: The largest size.
    parse: Parse a thing.
    ");
    assert_eq!(
        signature(&s, "double"),
        "export const double = (x: number): number => x * 2;"
    );
}

#[test]
fn typescript_references_and_imports() {
    let s = symbols(Lang::TypeScript, "sample.ts");
    // `parse()` in a comment and in a string is no reference (and no call to it is made).
    assert!(refs(&s, "parse").is_empty());
    assert_eq!(refs(&s, "join"), ["71:10 call path"]);
    assert_eq!(refs(&s, "distance"), ["72:14 call Geometry"]);
    assert_eq!(refs(&s, "area"), ["65:34 call this"]);
    assert_eq!(refs(&s, "Base"), ["73:9 call -"]);
    assert_eq!(refs(&s, "logged"), ["63:4 call -"]);
    assert_eq!(refs(&s, "Point"), ["44:31 type -", "44:41 type -"]);
    assert_eq!(refs(&s, "Shape"), ["52:39 type -"]);
    insta::assert_snapshot!(imports(&s), @"
    2 fs readFile read
    2 fs writeFile -
    3 node:path * path
    4 ./default default Default
    5 ./config Config -
    6 legacy - legacy
    7 ./helpers helper publicHelper
    ");
}

#[test]
fn tsx_definitions_and_references() {
    let s = symbols(Lang::Tsx, "sample.tsx");
    insta::assert_snapshot!(outline(&s), @"
    interface Props - 4-6
    field title Props 5-5
    function Button - 8-11
    function Panel - 13-19
    ");
    // A component used in JSX is called; an intrinsic element (`<div>`) is not a name.
    assert_eq!(refs(&s, "Button"), ["16:8 call -"]);
    assert!(refs(&s, "div").is_empty());
    assert_eq!(refs(&s, "setCount"), ["10:33 call -"]);
    assert_eq!(refs(&s, "Element"), ["13:42 type JSX"]);
    insta::assert_snapshot!(imports(&s), @"
    2 react default React
    2 react useState -
    ");
}

#[test]
fn javascript_definitions() {
    let s = symbols(Lang::JavaScript, "sample.js");
    insta::assert_snapshot!(outline(&s), @"
    constant LIMIT - 8-8
    variable legacy - 9-9
    function readIt - 12-15
    function generate - 17-19
    class Widget - 21-30
    field count Widget 22-22
    constructor constructor Widget 23-26
    method render Widget 27-29
    method extra Widget 32-34
    constant api - 36-44
    method list api 37-39
    method get api 40-42
    method remove api 43-43
    function helper - 47-47
    function other - 48-48
    variable VALUE - 49-49
    function default - 51-53
    function named - 54-54
    ");
    insta::assert_snapshot!(docs(&s), @"readIt: Read a file.");
}

#[test]
fn javascript_references_and_imports() {
    let s = symbols(Lang::JavaScript, "sample.js");
    // `readIt()` in a comment and in a string is no reference; the call in `extra` is.
    assert_eq!(refs(&s, "readIt"), ["33:10 call -", "46:20 other -"]);
    assert_eq!(refs(&s, "readFileSync"), ["14:13 call fs"]);
    assert_eq!(refs(&s, "render"), ["28:20 call this.el"]);
    assert_eq!(refs(&s, "list"), ["54:32 call api"]);
    assert_eq!(refs(&s, "Base"), ["21:22 type -"]);
    insta::assert_snapshot!(imports(&s), @"
    3 fs - fs
    4 path join -
    4 path resolve res
    5 ./esm.js default def
    5 ./esm.js named alias
    6 ./all.js * everything
    52 ./lazy.js - -
    ");
}

#[test]
fn go_definitions() {
    let s = symbols(Lang::Go, "sample.go");
    insta::assert_snapshot!(outline(&s), @"
    constant MaxSize - 13-13
    constant A - 16-16
    constant B - 16-16
    constant C - 17-17
    variable Global - 20-20
    type_alias Celsius - 23-23
    type_alias Alias - 25-25
    interface Shape - 29-32
    method Area Shape 30-30
    struct Point - 36-40
    field X Point 37-37
    field Y Point 37-37
    field Name Point 38-38
    field Embedded Point 39-39
    struct List - 41-43
    field items List 42-42
    function NewPoint - 47-52
    method Area Point 55-57
    method Len List 59-59
    method String Point 61-61
    function main - 63-67
    ");
    insta::assert_snapshot!(docs(&s), @"
    MaxSize: MaxSize is the largest size.
    Celsius: Celsius is a temperature.
    Shape: Shape has an area.
    Point: Point is a point.
    NewPoint: NewPoint makes a point.
    Area: Area of a point is zero.
    ");
    assert_eq!(signature(&s, "Area"), "Area() float64");
}

#[test]
fn go_references_and_imports() {
    let s = symbols(Lang::Go, "sample.go");
    // `NewPoint()` in a comment and in a string is no reference; the call in `main` is.
    assert_eq!(refs(&s, "NewPoint"), ["64:7 call -"]);
    assert_eq!(refs(&s, "Println"), ["50:6 call fmt"]);
    assert_eq!(refs(&s, "ToUpper"), ["50:18 call str"]);
    assert_eq!(refs(&s, "Area"), ["65:4 call p"]);
    assert_eq!(refs(&s, "Stringer"), ["31:6 type fmt"]);
    assert_eq!(
        refs(&s, "Point"),
        ["47:26 type -", "51:10 type -", "55:10 type -", "61:7 type -"]
    );
    // The package clause names this package; it refers to nothing.
    assert!(refs(&s, "sample").is_empty());
    insta::assert_snapshot!(imports(&s), @"
    5 fmt - -
    6 strings - str
    7 embed - _
    10 os - -
    ");
}

#[test]
fn java_definitions() {
    let s = symbols(Lang::Java, "Sample.java");
    insta::assert_snapshot!(outline(&s), @"
    class Sample - 10-68
    field MAX_SIZE Sample 11-11
    field name Sample 12-12
    field label Sample 12-12
    constructor Sample Sample 15-17
    constructor Sample Sample 19-22
    method run Sample 25-31
    method helper Sample 36-38
    method helper Sample 40-42
    class Inner Sample 44-48
    class Deeper Sample.Inner 45-47
    method go Sample.Inner.Deeper 46-46
    interface Listener Sample 50-53
    constant PRIORITY Sample.Listener 51-51
    method onEvent Sample.Listener 52-52
    enum Color Sample 55-61
    enum_member RED Sample.Color 56-56
    enum_member GREEN Sample.Color 56-56
    constructor Color Sample.Color 58-58
    constructor Color Sample.Color 59-59
    method code Sample.Color 60-60
    class Pair Sample 63-63
    field left Sample.Pair 63-63
    field right Sample.Pair 63-63
    interface Marker Sample 65-67
    method value Sample.Marker 66-66
    class Codes - 70-74
    field FIRST Codes 71-73
    field SECOND Codes 73-73
    ");
    insta::assert_snapshot!(docs(&s), @"
    Sample: A sample class.
    Sample: Makes an empty sample.
    helper: Help.
    ");
    // The annotation above `run` is not its signature, nor its first line.
    assert_eq!(signature(&s, "run"), "public void run() {");
}

#[test]
fn java_references_and_imports() {
    let s = symbols(Lang::Java, "Sample.java");
    // `run()` in a comment and in a string is no reference.
    assert!(refs(&s, "run").is_empty());
    assert_eq!(refs(&s, "println"), ["28:20 call System.out"]);
    assert_eq!(refs(&s, "format"), ["30:24 call Util"]);
    assert_eq!(refs(&s, "helper"), ["28:28 call -"]);
    assert_eq!(refs(&s, "ArrayList"), ["29:34 call -"]);
    assert_eq!(refs(&s, "Override"), ["24:6 type -"]);
    assert_eq!(refs(&s, "name"), ["21:14 other this", "21:21 other -", "60:32 call -"]);
    insta::assert_snapshot!(imports(&s), @"
    4 java.util List -
    5 java.util * -
    6 java.lang.Math max -
    ");
}

#[test]
fn languages_by_extension() {
    let cases = [
        ("src/lib.rs", Some(Lang::Rust)),
        ("a/b.py", Some(Lang::Python)),
        ("types.pyi", Some(Lang::Python)),
        ("x.ts", Some(Lang::TypeScript)),
        ("x.d.ts", Some(Lang::TypeScript)),
        ("x.mts", Some(Lang::TypeScript)),
        ("x.cts", Some(Lang::TypeScript)),
        ("x.tsx", Some(Lang::Tsx)),
        ("x.js", Some(Lang::JavaScript)),
        ("x.mjs", Some(Lang::JavaScript)),
        ("x.cjs", Some(Lang::JavaScript)),
        ("x.jsx", Some(Lang::JavaScript)),
        ("main.go", Some(Lang::Go)),
        ("A.java", Some(Lang::Java)),
        ("LOUD.RS", Some(Lang::Rust)),
        ("README.md", None),
        ("Makefile", None),
        ("rs", None),
    ];
    for (path, lang) in cases {
        assert_eq!(Lang::of(path), lang, "{path}");
    }
}

#[test]
fn serialises_for_the_store() {
    let s = symbols(Lang::Rust, "sample.rs");
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(serde_json::from_str::<FileSymbols>(&json).unwrap(), s);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["lang"], "rust");
    assert_eq!(value["definitions"][0]["kind"], "constant");
    let names: Vec<_> = Lang::ALL.iter().map(|l| serde_json::to_value(l).unwrap()).collect();
    let strs: Vec<_> = Lang::ALL.iter().map(|l| l.as_str()).collect();
    assert_eq!(names, strs);
}

/// Small sources in every language that parsers dislike: no panic, and what parses is kept.
#[test]
fn broken_inputs_yield_what_parses() {
    let cases: [(Lang, &str, &str); 7] = [
        (
            Lang::Rust,
            "fn good() {}\nfn broken( {\nstruct Kept { x: u32 }\n",
            "good",
        ),
        (
            Lang::Python,
            "def good():\n    pass\ndef broken(:\n    pass\nclass Kept:\n    pass\n",
            "good",
        ),
        (
            Lang::TypeScript,
            "function good() {}\nfunction broken() { let = ; }\nclass Kept {}\n",
            "good",
        ),
        (Lang::Tsx, "function good() { return <div>; }\nclass Kept {}\n", "good"),
        (
            Lang::JavaScript,
            "function good() {}\nconst = ;\nclass Kept {}\n",
            "good",
        ),
        (
            Lang::Go,
            "package p\nfunc good() {}\nfunc broken( {\ntype Kept struct{}\n",
            "good",
        ),
        (Lang::Java, "class Kept { void good() {} void broken( { }\n", "good"),
    ];
    for (lang, source, name) in cases {
        let s = extract(lang, source.as_bytes()).unwrap();
        let names: Vec<_> = s.definitions.iter().map(|d| d.name.as_str()).collect();
        assert!(names.contains(&name), "{lang}: {names:?}");
        assert!(names.contains(&"Kept"), "{lang}: {names:?}");
    }
}

#[test]
fn empty_and_blank_files() {
    for lang in Lang::ALL {
        for source in ["", "\n\n", "   ", "\u{feff}"] {
            let s = extract(lang, source.as_bytes()).unwrap();
            assert!(
                s.definitions.is_empty() && s.references.is_empty() && s.imports.is_empty(),
                "{lang}"
            );
            assert!(!s.truncated);
        }
    }
}

#[test]
fn invalid_utf8_is_read_lossily() {
    let mut source = b"fn caf".to_vec();
    source.extend_from_slice(&[0xff, 0xfe]);
    source.extend_from_slice(b"() {}\nfn fine() { caf\xe9(); }\n");
    let s = extract(Lang::Rust, &source).unwrap();
    let names: Vec<_> = s.definitions.iter().map(|d| d.name.as_str()).collect();
    assert!(names.contains(&"fine"), "{names:?}");
    for lang in Lang::ALL {
        let garbage: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        extract(lang, &garbage).unwrap();
    }
}

/// A minified bundle: one line of megabytes. Signatures stay short, references stop at the limit.
#[test]
fn huge_minified_line() {
    let mut source = String::new();
    for i in 0..21_000 {
        source.push_str(&format!("function f{i}(a){{return g{i}(a)+h.k{i}(a)}};"));
    }
    let s = extract(Lang::JavaScript, source.as_bytes()).unwrap();
    assert_eq!(s.definitions.len(), 20_000);
    assert_eq!(s.references.len(), MAX_REFERENCES);
    assert!(s.truncated);
    let first = &s.definitions[0];
    assert_eq!((first.name.as_str(), first.start_line, first.end_line), ("f0", 1, 1));
    assert!(s.definitions.iter().all(|d| d.signature.chars().count() <= MAX_TEXT));
    let last = &s.definitions[s.definitions.len() - 1];
    assert!(
        last.signature.starts_with(&format!("function {}(a)", last.name)),
        "{}",
        last.signature
    );
    // Columns count bytes on the one line; qualifiers stay exact.
    let k1 = s.references.iter().find(|r| r.name == "k1").unwrap();
    let at = source.find("h.k1(").unwrap() + 3;
    assert_eq!(
        (k1.line, k1.column as usize, k1.kind, k1.qualifier.as_deref()),
        (1, at, RefKind::Call, Some("h"))
    );
}

/// Nesting thousands deep (generated code, a hostile file) does not overflow the walk's stack.
#[test]
fn deep_nesting() {
    let depth = 20_000;
    let source = format!("x = {}1{}\n", "[".repeat(depth), "]".repeat(depth));
    let s = extract(Lang::Python, source.as_bytes()).unwrap();
    assert_eq!(s.definitions.len(), 1);
    let source = format!("fn f() {{ {}1{} }}\n", "(".repeat(depth), ")".repeat(depth));
    extract(Lang::Rust, source.as_bytes()).unwrap();
}
