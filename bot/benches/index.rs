//! The code index (issue 19) on a generated repository of 50,000 source files in six languages and
//! on real trees (the crate sources in Cargo's registry, Python's standard library), against
//! Universal Ctags on the same files in the same run:
//!
//! - `ctags`: `ctags -L` over the index's own file list (one thread, definitions only);
//! - `cold`: the index built from nothing (both cores, no parse cache);
//! - `cold, filling the cache`: the same, writing the parse cache as a first job does;
//! - `new copy, warm cache`: another working copy of the tree with 10 files changed: every file
//!   read and hashed, 10 parsed, the rest from the cache (a job on a new commit in a new copy);
//! - `same copy, 10 changed`: the previous job's index of the same working copy as the seed, 10
//!   files changed (a job in a warm workspace, or a session after a command that touched 10 files);
//! - `after a command`: the in-session refresh after `bash`: every file's size and change time
//!   compared, 10 changed files read again;
//! - queries: `find_symbol` (exact, qualified, prefix, fuzzy) and `find_references` (narrowed by a
//!   qualified name, bare, and a name used everywhere), p50 and p99 over many different names;
//! - memory: the resident set of a child process before and after building the index, per symbol.
//!
//! Run: `cargo bench -p pitcrew --bench index` (figures go in BENCHMARKS.md). Needs
//! `universal-ctags`.

#![allow(
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "a benchmark reports on the terminal"
)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pitcrew::index::cache::BlobCache;
use pitcrew::index::files;
use pitcrew::index::live::{Completeness, Limits, LiveIndex};
use pitcrew::index::lookup;

type Error = Box<dyn std::error::Error>;

const FILES: usize = 50_000;
const PER_DIR: usize = 100;
const CHANGED: usize = 10;
const QUERIES: usize = 2_000;
const CHILD: &str = "PITCREW_INDEX_BENCH_CHILD";

/// A small deterministic generator (xorshift), so every run builds the same tree.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let at = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[at]
}

/// The extension and text of generated file `i`, which uses definitions of files `j` and `k`.
fn source(i: usize, j: usize, k: usize, version: usize) -> (&'static str, String) {
    let (dj, dk) = (j / PER_DIR, k / PER_DIR);
    match i % 20 {
        0..=7 => (
            "rs",
            format!(
                "//! Module {i}.\nuse crate::m{dj:03}::f{j:03}::Item{j};\nuse crate::m{dk:03}::f{k:03}::process_{k};\n\n\
                 /// A record of module {i}.\n#[derive(Debug, Clone)]\npub struct Item{i} {{\n    pub id: u64,\n    pub name: String,\n}}\n\n\
                 impl Item{i} {{\n    /// Makes one.\n    pub fn new(id: u64) -> Item{i} {{\n        Item{i} {{ id, name: format!(\"item{i}\") }}\n    }}\n\n\
                 \x20   pub fn value_{i}(&self) -> u64 {{\n        self.id + helper_{i}(self.id) + {version}\n    }}\n\n\
                 \x20   pub fn combine(&self, other: &Item{j}) -> u64 {{\n        self.value_{i}() + other.value_{j}()\n    }}\n}}\n\n\
                 pub trait Visit{i} {{\n    fn visit(&self, item: &Item{i}) -> u64;\n}}\n\n\
                 impl Visit{i} for Item{j} {{\n    fn visit(&self, item: &Item{i}) -> u64 {{\n        item.value_{i}() + process_{k}(&[])\n    }}\n}}\n\n\
                 fn helper_{i}(x: u64) -> u64 {{\n    x * {i}\n}}\n\n\
                 pub fn process_{i}(items: &[Item{i}]) -> u64 {{\n    items.iter().map(|it| it.value_{i}()).sum()\n}}\n\n\
                 pub const LIMIT_{i}: usize = {i};\n"
            ),
        ),
        8..=11 => (
            "py",
            format!(
                "\"\"\"Module {i}.\"\"\"\nfrom m{dj:03}.f{j:03} import Item{j}\nfrom m{dk:03}.f{k:03} import process_{k} as run_{k}\n\n\
                 LIMIT_{i} = {i}\n\n\nclass Item{i}:\n    \"\"\"A record of module {i}.\"\"\"\n\n    def __init__(self, ident):\n        self.ident = ident + {version}\n\n\
                 \x20   def value_{i}(self):\n        return self.ident + helper_{i}(self.ident)\n\n\
                 \x20   def combine(self, other: Item{j}):\n        return self.value_{i}() + other.value_{j}()\n\n\
                 \x20   @property\n    def name(self):\n        return f\"item{i}\"\n\n\n\
                 def helper_{i}(x):\n    return x * {i}\n\n\n\
                 async def process_{i}(items):\n    return sum(item.value_{i}() for item in items) + run_{k}([])\n"
            ),
        ),
        12..=14 => (
            "ts",
            format!(
                "// Module {i}.\nimport {{ Item{j} }} from \"../m{dj:03}/f{j:03}\";\nimport {{ process{k} }} from \"../m{dk:03}/f{k:03}\";\n\n\
                 export interface Shape{i} {{\n  id: number;\n  name: string;\n}}\n\n\
                 export class Item{i} implements Shape{i} {{\n  name = \"item{i}\";\n  constructor(public id: number) {{}}\n\n\
                 \x20 value{i}(): number {{\n    return this.id + helper{i}(this.id) + {version};\n  }}\n\n\
                 \x20 combine(other: Item{j}): number {{\n    return this.value{i}() + other.value{j}();\n  }}\n}}\n\n\
                 function helper{i}(x: number): number {{\n  return x * {i};\n}}\n\n\
                 export const process{i} = (items: Item{i}[]): number =>\n  items.reduce((sum, item) => sum + item.value{i}(), process{k}([]));\n\n\
                 export type Pair{i} = [Item{i}, Item{j}];\n"
            ),
        ),
        15 => (
            "js",
            format!(
                "// Module {i}.\nconst {{ Item{j} }} = require(\"../m{dj:03}/f{j:03}\");\nimport {{ process{k} }} from \"../m{dk:03}/f{k:03}\";\n\n\
                 class Item{i} {{\n  constructor(id) {{\n    this.id = id + {version};\n  }}\n\n\
                 \x20 value{i}() {{\n    return this.id + helper{i}(this.id);\n  }}\n\n\
                 \x20 combine(other) {{\n    return this.value{i}() + other.value{j}();\n  }}\n}}\n\n\
                 function helper{i}(x) {{\n  return x * {i};\n}}\n\n\
                 export const process{i} = (items) => items.reduce((sum, item) => sum + item.value{i}(), process{k}([]));\n\n\
                 module.exports = {{ Item{i}, helper{i}, Item{j} }};\n"
            ),
        ),
        16..=17 => (
            "go",
            format!(
                "// Package m{i} is module {i}.\npackage m{i}\n\nimport (\n\t\"fmt\"\n\n\tother \"example.com/big/m{dj:03}/f{j:03}\"\n)\n\n\
                 // Item{i} is a record of module {i}.\ntype Item{i} struct {{\n\tID   uint64\n\tName string\n}}\n\n\
                 // Visitor{i} visits items.\ntype Visitor{i} interface {{\n\tVisit(item *Item{i}) uint64\n}}\n\n\
                 // New makes one.\nfunc New(id uint64) *Item{i} {{\n\treturn &Item{i}{{ID: id, Name: fmt.Sprintf(\"item%d\", {i})}}\n}}\n\n\
                 func (it *Item{i}) Value{i}() uint64 {{\n\treturn it.ID + helper{i}(it.ID) + {version}\n}}\n\n\
                 func (it *Item{i}) Combine(o *other.Item{j}) uint64 {{\n\treturn it.Value{i}() + o.Value{j}()\n}}\n\n\
                 func helper{i}(x uint64) uint64 {{\n\treturn x * {i}\n}}\n\n\
                 const Limit{i} = {i}\n"
            ),
        ),
        _ => (
            "java",
            format!(
                "// Module {i}.\npackage big.m{dk:03};\n\nimport big.m{dj:03}.Item{j};\nimport java.util.List;\n\n\
                 /** A record of module {i}. */\npublic class Item{i} {{\n    private final long id;\n\n\
                 \x20   public Item{i}(long id) {{\n        this.id = id + {version};\n    }}\n\n\
                 \x20   public long value{i}() {{\n        return id + helper{i}(id);\n    }}\n\n\
                 \x20   public long combine(Item{j} other) {{\n        return value{i}() + other.value{j}();\n    }}\n\n\
                 \x20   static long helper{i}(long x) {{\n        return x * {i};\n    }}\n\n\
                 \x20   public static long process{i}(List<Item{i}> items) {{\n        long sum = 0;\n        for (Item{i} item : items) {{\n            sum += item.value{i}();\n        }}\n        return sum;\n    }}\n\n\
                 \x20   public interface Visitor{i} {{\n        long visit(Item{i} item);\n    }}\n}}\n"
            ),
        ),
    }
}

fn generated_path(i: usize, ext: &str) -> String {
    format!("m{:03}/f{:03}.{ext}", i / PER_DIR, i % PER_DIR)
}

/// Writes the generated repository into `root`; returns the files that `change` rewrites.
fn generate(root: &Path) -> Result<(), Error> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for dir in 0..FILES / PER_DIR {
        std::fs::create_dir_all(root.join(format!("m{dir:03}")))?;
    }
    for i in 0..FILES {
        let (j, k) = (rng.below(FILES), rng.below(FILES));
        let (ext, text) = source(i, j, k, 0);
        std::fs::write(root.join(generated_path(i, ext)), text)?;
    }
    Ok(())
}

/// Rewrites `CHANGED` files of the generated repository (a new `version`: different contents).
fn change(root: &Path, version: usize) -> Result<Vec<String>, Error> {
    let mut changed = Vec::new();
    for n in 0..CHANGED {
        let i = (n * 4_999 + version * 7) % FILES;
        let (ext, text) = source(i, (i + 1) % FILES, (i + 2) % FILES, version);
        let path = generated_path(i, ext);
        std::fs::write(root.join(&path), text)?;
        changed.push(path);
    }
    Ok(changed)
}

/// Universal Ctags over the files the index reads, writing its tags file: the wall time.
fn ctags(root: &Path, scratch: &Path) -> Result<Duration, Error> {
    let listing = files::list(root, usize::MAX);
    let mut list = String::new();
    for file in &listing.files {
        let _ = writeln!(list, "{}", file.path);
    }
    let list_path = scratch.join("ctags-files");
    std::fs::write(&list_path, list)?;
    let started = Instant::now();
    let status = Command::new("ctags")
        .arg("-f")
        .arg(scratch.join("tags"))
        .arg("-L")
        .arg(&list_path)
        .current_dir(root)
        .stderr(Stdio::null())
        .status()?;
    let took = started.elapsed();
    if !status.success() {
        return Err(format!("ctags failed: {status}").into());
    }
    Ok(took)
}

fn complete(live: &LiveIndex) -> Result<(), Error> {
    let (_, completeness) = live.query(Duration::ZERO, |_| ());
    if completeness != Completeness::Complete {
        return Err(format!("the index is not complete: {completeness:?}").into());
    }
    Ok(())
}

/// Timings of `runs` rounds of `query` over different names.
fn time_queries(
    live: &LiveIndex,
    names: &[String],
    query: impl Fn(&mut pitcrew::index::store::Index, &str) -> usize,
) -> (Duration, Duration, usize) {
    let mut samples = Vec::with_capacity(names.len());
    let mut found = 0;
    for name in names {
        let started = Instant::now();
        let (n, _) = live.query(Duration::ZERO, |index| query(index, name));
        samples.push(started.elapsed());
        found += n;
    }
    (percentile(&mut samples, 0.5), percentile(&mut samples, 0.99), found)
}

fn report(label: &str, duration: Duration, note: &str) {
    println!("{label:<42} {:>10.1} ms  {note}", ms(duration));
}

/// Builds the index of `root` now and reports the time until a query had a complete answer (the
/// cache's eviction, which follows off the queries' path, shown apart).
fn build(
    label: &str,
    root: &Path,
    cache: Option<BlobCache>,
    seed: Option<pitcrew::index::store::Index>,
) -> Result<(LiveIndex, Duration), Error> {
    let started = Instant::now();
    let live = LiveIndex::build_now(root, cache, seed);
    let total = started.elapsed();
    complete(&live)?;
    let ready = live.ready_after().ok_or("the build did not finish")?;
    report(
        label,
        ready,
        &format!(
            "(parsed, cached) = {:?}; with the cache's eviction {:.1} ms",
            live.work(),
            ms(total)
        ),
    );
    Ok((live, ready))
}

/// The child process of the memory measure: builds the index of the tree at `root`, prints the
/// resident set before and after, the symbols and the index's own estimate.
fn child(root: &Path) -> Result<(), Error> {
    let before = rss()?;
    let live = LiveIndex::build_limited(root, None, None, Limits::DEFAULT);
    let after = rss()?;
    let index = live.close().ok_or("the index is incomplete")?;
    let (defs, refs, names) = index.counts();
    println!(
        "{before} {after} {defs} {refs} {names} {} {}",
        index.approx_bytes(),
        index.file_count()
    );
    Ok(())
}

fn rss() -> Result<u64, Error> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .ok_or("no VmRSS")?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()?;
    Ok(kib * 1024)
}

fn memory(root: &Path) -> Result<(), Error> {
    let output = Command::new(std::env::current_exe()?).env(CHILD, root).output()?;
    if !output.status.success() {
        return Err(format!("the memory child failed: {}", String::from_utf8_lossy(&output.stderr)).into());
    }
    let text = String::from_utf8(output.stdout)?;
    let numbers: Vec<u64> = text.split_whitespace().map(str::parse).collect::<Result<_, _>>()?;
    let [before, after, defs, refs, names, approx, files] = numbers[..] else {
        return Err(format!("unexpected child output {text:?}").into());
    };
    let symbols = defs + refs;
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "memory: {files} files, {defs} definitions + {refs} references ({names} names): resident {:.1} MiB → {:.1} MiB \
         (+{:.1} MiB, {:.0} bytes per definition or reference; the index's own estimate {:.1} MiB)",
        mib(before),
        mib(after),
        mib(after.saturating_sub(before)),
        after.saturating_sub(before) as f64 / symbols.max(1) as f64,
        mib(approx),
    );
    Ok(())
}

/// Names to query: every generated file's definitions, a deterministic sample.
fn generated_names(count: usize) -> Vec<(String, String, String, String)> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..count)
        .map(|_| {
            let i = rng.below(FILES);
            match i % 20 {
                0..=7 => (
                    format!("process_{i}"),
                    format!("Item{i}::value_{i}"),
                    format!("helper_{i}"),
                    format!("proces_{i}"),
                ),
                8..=11 => (
                    format!("helper_{i}"),
                    format!("Item{i}.value_{i}"),
                    format!("Item{i}"),
                    format!("helpr_{i}"),
                ),
                12..=15 => (
                    format!("helper{i}"),
                    format!("Item{i}.value{i}"),
                    format!("Item{i}"),
                    format!("helpr{i}"),
                ),
                16..=17 => (
                    format!("helper{i}"),
                    format!("Item{i}.Value{i}"),
                    format!("Item{i}"),
                    format!("helpr{i}"),
                ),
                _ => (
                    format!("process{i}"),
                    format!("Item{i}.value{i}"),
                    format!("helper{i}"),
                    format!("proces{i}"),
                ),
            }
        })
        .collect()
}

fn queries(live: &LiveIndex, names: &[(String, String, String, String)]) {
    let column = |f: fn(&(String, String, String, String)) -> &String| -> Vec<String> {
        names.iter().map(|n| f(n).clone()).collect()
    };
    let exact = column(|n| &n.0);
    let qualified = column(|n| &n.1);
    let bare = column(|n| &n.2);
    let typo = column(|n| &n.3);
    let prefix: Vec<String> = exact.iter().map(|n| n[..n.len() - 1].to_owned()).collect();
    let symbol = |index: &mut pitcrew::index::store::Index, q: &str| lookup::find_symbol(index, q, None, None).len();
    let references = |index: &mut pitcrew::index::store::Index, q: &str| {
        lookup::find_references(index, q, None)
            .files
            .iter()
            .map(|f| f.uses.len())
            .sum()
    };
    let runs: [(&str, &[String], &Query); 7] = [
        ("find_symbol exact", &exact, &symbol),
        ("find_symbol qualified", &qualified, &symbol),
        ("find_symbol prefix", &prefix, &symbol),
        ("find_symbol fuzzy (a typo)", &typo, &symbol),
        ("find_references qualified (narrowed)", &qualified, &references),
        ("find_references bare name", &bare, &references),
        (
            "find_references `new` (everywhere)",
            &["new".to_owned(), "combine".to_owned(), "Item1".to_owned()],
            &references,
        ),
    ];
    for (label, names, query) in runs {
        let (p50, p99, found) = time_queries(live, names, query);
        println!(
            "{label:<42} p50 {:>8.3} ms  p99 {:>8.3} ms  ({} queries, {:.1} results each)",
            ms(p50),
            ms(p99),
            names.len(),
            found as f64 / names.len() as f64
        );
    }
}

/// One kind of query, answering how many results it found.
type Query = dyn Fn(&mut pitcrew::index::store::Index, &str) -> usize;

/// The measures that need only a tree: ctags, cold builds, a warm copy, memory.
fn builds(name: &str, root: &Path, scratch: &Path) -> Result<(), Error> {
    let listing = files::list(root, usize::MAX);
    println!("\n## {name}: {} files the index reads", listing.files.len());
    let ctags_time = ctags(root, scratch)?;
    report("ctags -L (one thread)", ctags_time, "");
    let started = Instant::now();
    let walked = files::list(root, usize::MAX);
    report(
        "the walk alone (list and stat)",
        started.elapsed(),
        &format!("{} files", walked.files.len()),
    );
    let (live, cold) = build("cold (two threads, no cache)", root, None, None)?;
    let (defs, refs, _) = live.query(Duration::ZERO, |index| index.counts()).0;
    println!(
        "{:<42} {:.2}× ctags; {defs} definitions, {refs} references",
        "",
        ms(cold) / ms(ctags_time)
    );
    drop(live);
    let cache_dir = scratch.join(format!("cache-{name}"));
    let cache = BlobCache::open(&cache_dir, 4 << 30)?;
    build("cold, filling the cache", root, Some(cache.clone()), None)?;
    build("new copy, warm cache, nothing changed", root, Some(cache), None)?;
    memory(root)?;
    Ok(())
}

fn main() -> Result<(), Error> {
    if let Some(root) = std::env::var_os(CHILD) {
        return child(Path::new(&root));
    }
    if Command::new("ctags").arg("--version").output().is_err() {
        return Err("the index benchmark compares against Universal Ctags: install universal-ctags".into());
    }
    let scratch = tempfile::tempdir()?;
    let root = scratch.path().join("big");
    let started = Instant::now();
    generate(&root)?;
    println!("generated {FILES} files in {:.1} s", started.elapsed().as_secs_f64());

    builds("generated", &root, scratch.path())?;

    // A new working copy on a commit that changed 10 files: everything read, 10 parsed.
    let cache = BlobCache::open(&scratch.path().join("cache-generated"), 4 << 30)?;
    change(&root, 1)?;
    let (live, _) = build("new copy, warm cache, 10 changed", &root, Some(cache.clone()), None)?;

    // The same working copy, from the last job's index (the shelf): only the 10 read.
    let seed = live.close().ok_or("incomplete")?;
    change(&root, 2)?;
    let (live, _) = build("same copy, 10 changed (from the shelf)", &root, Some(cache), Some(seed))?;

    // In the session: a command ran (every file's size and time compared), 10 files changed.
    let mut refresh = Vec::new();
    for version in 3..8 {
        change(&root, version)?;
        live.changed_anything();
        let started = Instant::now();
        live.query(Duration::ZERO, |_| ());
        refresh.push(started.elapsed());
    }
    report(
        "after a command, 10 changed (median of 5)",
        percentile(&mut refresh, 0.5),
        "",
    );
    let mut edit = Vec::new();
    for version in 8..13 {
        for path in change(&root, version)? {
            live.changed(&path);
        }
        let started = Instant::now();
        live.query(Duration::ZERO, |_| ());
        edit.push(started.elapsed());
    }
    report(
        "after 10 edits by the tools (median of 5)",
        percentile(&mut edit, 0.5),
        "",
    );

    println!();
    queries(&live, &generated_names(QUERIES));

    // Real trees.
    let real: Vec<(&str, PathBuf)> = [
        ("cargo registry sources", cargo_registry()),
        ("CPython Lib", python_lib()),
    ]
    .into_iter()
    .filter_map(|(name, path)| path.map(|p| (name, p)))
    .collect();
    for (name, path) in real {
        builds(name, &path, scratch.path())?;
    }
    Ok(())
}

fn cargo_registry() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let src = home.join("registry").join("src");
    std::fs::read_dir(&src)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
}

fn python_lib() -> Option<PathBuf> {
    let output = Command::new("python3")
        .args(["-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"])
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    path.is_dir().then_some(path)
}
