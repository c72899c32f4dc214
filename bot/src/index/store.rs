//! The index of a checkout in memory: every indexed file's definitions, references and imports,
//! compactly (names interned once, a reference in a few integers), and the definitions and
//! references of each name, so a lookup by name costs the matches it finds, not the tree. A file
//! is replaced or removed as a whole; the name tables drop its old entries lazily (each entry
//! names the file's generation) and are compacted when stale entries pile up.

use std::collections::{BTreeMap, HashMap};

use super::{Definition, FileSymbols, Import, Lang, RefKind, SymbolKind};

/// An interned name (or container, or qualifier).
pub type Name = u32;

/// No name: an absent container or qualifier.
const NONE: Name = u32::MAX;

/// One definition, compactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Def {
    pub name: Name,
    pub kind: SymbolKind,
    pub container: Name,
    pub start_line: u32,
    pub end_line: u32,
    pub signature: Box<str>,
    pub doc: Option<Box<str>>,
}

/// One reference, compactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ref {
    pub name: Name,
    pub line: u32,
    pub column: u32,
    pub kind: RefKind,
    pub qualifier: Name,
}

/// One indexed file.
#[derive(Debug, Clone)]
pub struct File {
    pub path: String,
    pub lang: Lang,
    pub size: u64,
    pub changed_ns: i128,
    /// Git's blob id of the contents that were read.
    pub blob: String,
    pub defs: Vec<Def>,
    pub refs: Vec<Ref>,
    pub imports: Vec<Import>,
    pub truncated: bool,
    /// Unique to this version of the file in this index: entries of the name tables that name
    /// another are stale.
    generation: u32,
}

/// `(file, its generation, the definition's or reference's index in it)`.
type Entry = (u32, u32, u32);

/// The index of one checkout.
#[derive(Debug, Default)]
pub struct Index {
    names: Vec<Box<str>>,
    name_ids: HashMap<Box<str>, Name>,
    files: Vec<Option<File>>,
    file_ids: HashMap<String, u32>,
    free: Vec<u32>,
    defs_by_name: HashMap<Name, Vec<Entry>>,
    refs_by_name: HashMap<Name, Vec<Entry>>,
    /// The next file version's generation.
    next_generation: u32,
    /// Entries of the tables above that name a replaced or removed file.
    stale: usize,
    live: usize,
    /// Lowercased names in order, for prefix queries; rebuilt when names were added.
    sorted: Option<Vec<(Box<str>, Name)>>,
}

impl Index {
    pub fn new() -> Index {
        Index::default()
    }

    /// The interned id of `text`, if it was ever seen.
    pub fn name_id(&self, text: &str) -> Option<Name> {
        self.name_ids.get(text).copied()
    }

    /// The text of an interned name (`""` for none).
    pub fn name(&self, id: Name) -> &str {
        if id == NONE {
            return "";
        }
        self.names.get(id as usize).map_or("", |n| n)
    }

    /// The text of an interned optional name.
    pub fn optional(&self, id: Name) -> Option<&str> {
        (id != NONE).then(|| self.name(id))
    }

    fn intern(&mut self, text: &str) -> Name {
        if let Some(id) = self.name_ids.get(text) {
            return *id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(NONE - 1);
        let text: Box<str> = text.into();
        self.names.push(text.clone());
        self.name_ids.insert(text, id);
        self.sorted = None;
        id
    }

    fn intern_optional(&mut self, text: Option<&str>) -> Name {
        text.map_or(NONE, |t| self.intern(t))
    }

    /// Puts `symbols` in as the file at `path` (replacing what it had).
    pub fn insert(&mut self, path: &str, size: u64, changed_ns: i128, blob: &str, symbols: FileSymbols) {
        self.remove(path);
        let generation = self.next_generation;
        self.next_generation = self.next_generation.wrapping_add(1);
        let FileSymbols {
            lang,
            definitions,
            references,
            imports,
            truncated,
        } = symbols;
        let defs: Vec<Def> = definitions
            .into_iter()
            .map(|d: Definition| Def {
                name: self.intern(&d.name),
                kind: d.kind,
                container: self.intern_optional(d.container.as_deref()),
                start_line: d.start_line,
                end_line: d.end_line,
                signature: d.signature.into_boxed_str(),
                doc: d.doc.map(String::into_boxed_str),
            })
            .collect();
        let refs: Vec<Ref> = references
            .into_iter()
            .map(|r| Ref {
                name: self.intern(&r.name),
                line: r.line,
                column: r.column,
                kind: r.kind,
                qualifier: self.intern_optional(r.qualifier.as_deref()),
            })
            .collect();
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.files.push(None);
                u32::try_from(self.files.len() - 1).unwrap_or(u32::MAX)
            }
        };
        for (n, def) in defs.iter().enumerate() {
            let entry = (id, generation, u32::try_from(n).unwrap_or(u32::MAX));
            let entries = self.defs_by_name.entry(def.name).or_default();
            if entries.is_empty() {
                // A newly defined name: the sorted list lacks it.
                self.sorted = None;
            }
            entries.push(entry);
        }
        for (n, r) in refs.iter().enumerate() {
            let entry = (id, generation, u32::try_from(n).unwrap_or(u32::MAX));
            self.refs_by_name.entry(r.name).or_default().push(entry);
        }
        self.live += defs.len() + refs.len();
        self.files[id as usize] = Some(File {
            path: path.to_owned(),
            lang,
            size,
            changed_ns,
            blob: blob.to_owned(),
            defs,
            refs,
            imports,
            truncated,
            generation,
        });
        self.file_ids.insert(path.to_owned(), id);
    }

    /// Takes the file at `path` out; returns its generation, when it was there.
    pub fn remove(&mut self, path: &str) -> Option<u32> {
        // (Its slot's next file gets a generation of its own: the entries left behind stay stale.)
        let id = self.file_ids.remove(path)?;
        let file = self.files.get_mut(id as usize)?.take()?;
        let entries = file.defs.len() + file.refs.len();
        self.live -= entries;
        self.stale += entries;
        self.free.push(id);
        if self.stale > 1_000 && self.stale > self.live {
            self.compact();
        }
        // The next file put in this slot starts past this generation.
        Some(file.generation)
    }

    /// Drops the stale entries of the name tables.
    fn compact(&mut self) {
        let files = &self.files;
        let current = |(file, generation, _): &Entry| {
            files
                .get(*file as usize)
                .and_then(Option::as_ref)
                .is_some_and(|f| f.generation == *generation)
        };
        for table in [&mut self.defs_by_name, &mut self.refs_by_name] {
            table.retain(|_, entries| {
                entries.retain(current);
                !entries.is_empty()
            });
        }
        self.stale = 0;
    }

    /// Remembers a new size and change time for the file at `path`, whose contents did not
    /// change.
    pub fn touch(&mut self, path: &str, size: u64, changed_ns: i128) {
        if let Some(id) = self.file_ids.get(path)
            && let Some(Some(file)) = self.files.get_mut(*id as usize)
        {
            file.size = size;
            file.changed_ns = changed_ns;
        }
    }

    /// The file at `path`.
    pub fn file(&self, path: &str) -> Option<&File> {
        let id = self.file_ids.get(path)?;
        self.files.get(*id as usize)?.as_ref()
    }

    /// Every file, in no particular order.
    pub fn files(&self) -> impl Iterator<Item = &File> {
        self.files.iter().flatten()
    }

    pub fn file_count(&self) -> usize {
        self.file_ids.len()
    }

    /// How many definitions and references the index holds, in all (what bounds its memory).
    pub fn symbol_count(&self) -> usize {
        self.live
    }

    /// The definitions named `name`, with their files.
    pub fn definitions_named(&self, name: Name) -> Vec<(&File, &Def)> {
        self.entries(&self.defs_by_name, name, |file, n| file.defs.get(n))
    }

    /// The references to `name`, with their files.
    pub fn references_named(&self, name: Name) -> Vec<(&File, &Ref)> {
        self.entries(&self.refs_by_name, name, |file, n| file.refs.get(n))
    }

    fn entries<'a, T>(
        &'a self,
        table: &'a HashMap<Name, Vec<Entry>>,
        name: Name,
        get: impl Fn(&'a File, usize) -> Option<&'a T>,
    ) -> Vec<(&'a File, &'a T)> {
        let Some(entries) = table.get(&name) else {
            return Vec::new();
        };
        entries
            .iter()
            .filter_map(|(file, generation, n)| {
                let file = self.files.get(*file as usize)?.as_ref()?;
                if file.generation != *generation {
                    return None;
                }
                Some((file, get(file, *n as usize)?))
            })
            .collect()
    }

    /// Names with at least one definition, lowercased, in order: for prefix and fuzzy lookups.
    pub fn defined_names(&mut self) -> &[(Box<str>, Name)] {
        if self.sorted.is_none() {
            let mut sorted: Vec<(Box<str>, Name)> = self
                .defs_by_name
                .keys()
                .map(|id| (self.name(*id).to_lowercase().into_boxed_str(), *id))
                .collect();
            sorted.sort();
            self.sorted = Some(sorted);
        }
        self.sorted.as_deref().unwrap_or_default()
    }

    /// Forgets the sorted name list (its names may no longer be defined).
    pub fn names_changed(&mut self) {
        self.sorted = None;
    }

    /// How many definitions and references the index holds, and the distinct names.
    pub fn counts(&self) -> (usize, usize, usize) {
        let defs = self.files().map(|f| f.defs.len()).sum();
        let refs = self.files().map(|f| f.refs.len()).sum();
        (defs, refs, self.names.len())
    }

    /// About how many bytes of memory the index holds (what a shelf of indexes is bounded by).
    pub fn approx_bytes(&self) -> u64 {
        use std::mem::size_of;
        let names: usize = self
            .names
            .iter()
            .map(|n| 2 * (n.len() + size_of::<Box<str>>()) + 16)
            .sum();
        let files: usize = self
            .files()
            .map(|f| {
                size_of::<File>()
                    + 2 * f.path.len()
                    + f.blob.len()
                    + f.defs.len() * size_of::<Def>()
                    + f.defs
                        .iter()
                        .map(|d| d.signature.len() + d.doc.as_ref().map_or(0, |d| d.len()))
                        .sum::<usize>()
                    + f.refs.len() * size_of::<Ref>()
                    + f.imports.len() * size_of::<Import>()
                    + f.imports.iter().map(|i| i.path.len()).sum::<usize>()
            })
            .sum();
        let tables: usize = [&self.defs_by_name, &self.refs_by_name]
            .iter()
            .map(|t| {
                t.len() * (size_of::<Name>() + size_of::<Vec<Entry>>())
                    + t.values().map(|e| e.capacity() * size_of::<Entry>()).sum::<usize>()
            })
            .sum();
        (names + files + tables + self.files.capacity() * size_of::<Option<File>>()) as u64
    }

    /// The files by path, for a stable order in answers.
    pub fn paths(&self) -> BTreeMap<&str, &File> {
        self.files().map(|f| (f.path.as_str(), f)).collect()
    }
}
