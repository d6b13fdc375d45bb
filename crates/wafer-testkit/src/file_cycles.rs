//! The file-level import graph of a crate, and its cycles: the project rule is "no import cycles
//! between files; lower layers never name upper ones". `tests/file_cycles.rs` runs this over every
//! crate of the workspace.
//!
//! What counts as an edge "file A -> file B" (A names an item defined in B):
//!
//! - A path in A, in a `use` or in code, that starts with `crate::`, `$crate::`, `super::`,
//!   `self::` or the name of a module declared in A's module, resolves to the file of the
//!   *deepest module it names*: `crate::space::map::Location` is an edge to `space/map.rs`,
//!   `crate::space::Location` (a re-export) an edge to `space/mod.rs`. Re-exports are not followed
//!   further: the facade is the file named.
//! - Declaring a child (`mod child;`) is not an edge: declaring is not using.
//! - A re-export (`pub use`, `pub(crate) use`, ...) is an edge only when the file also uses the
//!   re-exported name itself; a `mod.rs` that only declares and re-exports its children names
//!   nothing. A glob re-export (`pub use child::*`) is never an edge.
//! - Items under `#[cfg(test)]` (test modules, inline or in their own file, and their subtrees)
//!   are left out, as are `tests/`, `benches/` and `examples/`: tests may reach anywhere.
//! - Inline modules (`mod m { ... }`) belong to their file; paths inside them resolve from them.
//!
//! The parser is token-based, not a compiler: comments and literals are blanked first, and a name
//! that is only a coincidence (a local variable spelled like a child module, followed by `::`) can
//! add an edge. That errs on the side of reporting; a `mod` whose file cannot be found panics.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};

/// A module path from the crate root (`[]` is the root).
type ModPath = Vec<String>;

/// One edge and the first place that made it, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub line: usize,
    pub path: String,
}

/// Reads a file of the crate (relative to the crate's `src/`): the disk for the workspace, a map
/// for the checker's own tests.
pub trait Source {
    fn read(&self, rel: &Path) -> Option<String>;
}

impl Source for BTreeMap<PathBuf, String> {
    fn read(&self, rel: &Path) -> Option<String> {
        self.get(rel).cloned()
    }
}

/// A crate's `src/` directory on disk.
#[derive(Debug)]
pub struct Dir(pub PathBuf);

impl Source for Dir {
    fn read(&self, rel: &Path) -> Option<String> {
        std::fs::read_to_string(self.0.join(rel)).ok()
    }
}

/// A path seen in a file, before resolution.
#[derive(Debug)]
struct Ref {
    module: ModPath,
    segs: Vec<String>,
    line: usize,
}

#[derive(Debug, Default)]
struct Crate {
    /// Module path -> file (relative to `src/`, `/`-separated).
    modules: BTreeMap<ModPath, String>,
    refs: BTreeMap<String, Vec<Ref>>,
}

/// Every edge of the crate whose root file is `root` (e.g. `lib.rs`), sorted and deduplicated by
/// (from, to), keeping the first reference.
pub fn edges(src: &dyn Source, root: &str) -> Vec<Edge> {
    let mut krate = Crate::default();
    parse_file(src, &mut krate, root, Vec::new());
    let mut out: BTreeMap<(String, String), Edge> = BTreeMap::new();
    for (file, refs) in &krate.refs {
        for r in refs {
            let Some(to) = resolve(&krate.modules, &r.module, &r.segs) else { continue };
            if to == *file {
                continue;
            }
            out.entry((file.clone(), to.clone())).or_insert_with(|| Edge {
                from: file.clone(),
                to: to.clone(),
                line: r.line,
                path: r.segs.join("::"),
            });
        }
    }
    out.into_values().collect()
}

/// The file of the deepest module `segs` names, seen from `module`; `None` for another crate.
fn resolve(
    modules: &BTreeMap<ModPath, String>,
    module: &ModPath,
    segs: &[String],
) -> Option<String> {
    let mut base: ModPath;
    let mut rest = segs;
    match segs.first()?.as_str() {
        "crate" | "$crate" => {
            base = Vec::new();
            rest = &segs[1..];
        }
        "self" => {
            base = module.clone();
            rest = &segs[1..];
        }
        "super" => {
            base = module.clone();
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        first => {
            base = module.clone();
            base.push(first.to_string());
            if !modules.contains_key(&base) {
                return None;
            }
            rest = &segs[1..];
        }
    }
    for seg in rest {
        base.push(seg.clone());
        if !modules.contains_key(&base) {
            base.pop();
            break;
        }
    }
    modules.get(&base).cloned()
}

// ---- Lexing ----------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// Blanks comments and string, byte-string and char literals (keeping newlines, so lines still
/// count), so that braces and words inside them are not code.
fn blank(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < c.len() {
        let end = literal_end(&c, i);
        if end > i {
            out.extend(c[i..end].iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }));
            i = end;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Where the comment or literal starting at `i` ends, or `i` if none starts there.
fn literal_end(c: &[char], i: usize) -> usize {
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    let prev_ident = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
    match (at(i), at(i + 1)) {
        ('/', '/') => (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len()),
        ('/', '*') => block_comment_end(c, i),
        ('"', _) => quoted_end(c, i + 1, '"'),
        ('b', '"') if !prev_ident => quoted_end(c, i + 2, '"'),
        ('r', '"' | '#') | ('b', 'r') if !prev_ident => raw_end(c, i),
        ('b', '\'') if !prev_ident => quoted_end(c, i + 2, '\''),
        ('\'', _) => char_end(c, i),
        _ => i,
    }
}

fn block_comment_end(c: &[char], i: usize) -> usize {
    let (mut depth, mut k) = (0usize, i);
    while k + 1 < c.len() {
        if c[k] == '/' && c[k + 1] == '*' {
            depth += 1;
            k += 2;
        } else if c[k] == '*' && c[k + 1] == '/' {
            depth -= 1;
            k += 2;
            if depth == 0 {
                return k;
            }
        } else {
            k += 1;
        }
    }
    c.len()
}

fn quoted_end(c: &[char], mut k: usize, quote: char) -> usize {
    while k < c.len() {
        match c[k] {
            '\\' => k += 2,
            ch if ch == quote => return k + 1,
            _ => k += 1,
        }
    }
    c.len()
}

/// `r"..."`, `r#"..."#`, `br#"..."#`; an `r#ident` raw identifier is not a literal.
fn raw_end(c: &[char], i: usize) -> usize {
    let mut k = if c[i] == 'b' { i + 2 } else { i + 1 };
    let mut hashes = 0;
    while c.get(k) == Some(&'#') {
        hashes += 1;
        k += 1;
    }
    if c.get(k) != Some(&'"') {
        return i;
    }
    k += 1;
    while k < c.len() {
        if c[k] == '"' && (1..=hashes).all(|h| c.get(k + h) == Some(&'#')) {
            return k + 1 + hashes;
        }
        k += 1;
    }
    c.len()
}

/// A char literal (`'x'`, `'\n'`, `'\u{..}'`), or `i` for a lifetime or label (`'a`).
fn char_end(c: &[char], i: usize) -> usize {
    if c.get(i + 1) == Some(&'\\') {
        return quoted_end(c, i + 1, '\'');
    }
    if c.get(i + 2) == Some(&'\'') {
        return i + 3;
    }
    i
}

/// Tokens with their line numbers (1-based).
fn lex(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = blank(src).chars().collect();
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphabetic() || ch == '_' || (ch == '$' && c.get(i + 1) == Some(&'c')) {
            let start = i;
            i += 1;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            out.push((Tok::Ident(word.trim_start_matches("r#").to_string()), line));
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

// ---- Parsing ---------------------------------------------------------------------------------

/// Where the files of `module`'s children live, for a module whose file is `file`.
fn child_dir(file: &str, inline: &[String]) -> PathBuf {
    let path = Path::new(file);
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let mut dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    if !matches!(stem, "mod" | "lib" | "main") {
        dir.push(stem);
    }
    dir.extend(inline);
    dir
}

fn find_child(src: &dyn Source, dir: &Path, name: &str) -> (String, String) {
    for rel in [dir.join(format!("{name}.rs")), dir.join(name).join("mod.rs")] {
        if let Some(text) = src.read(&rel) {
            return (rel.to_string_lossy().replace('\\', "/"), text);
        }
    }
    panic!("module file for `mod {name};` not found under {}", dir.display());
}

/// The state of one file's walk.
struct Walk<'a> {
    toks: &'a [(Tok, usize)],
    /// Inline modules open in this file: name and the brace depth inside them.
    inline: Vec<(String, usize)>,
    module: ModPath,
    refs: Vec<Ref>,
    /// Names re-exported by `pub use`, with the path that re-exports them.
    reexports: Vec<(String, Ref)>,
    /// Every identifier outside `use` items, to tell a re-export the file also uses.
    used: BTreeSet<String>,
    children: Vec<(ModPath, String)>,
    /// Brace depth of the walk, and the depths that are an `enum`'s body (its variants' names
    /// are declarations, not uses).
    depth: usize,
    enum_bodies: Vec<usize>,
}

fn parse_file(src: &dyn Source, krate: &mut Crate, file: &str, module: ModPath) {
    let text = src.read(Path::new(file)).unwrap_or_else(|| panic!("cannot read {file}"));
    let toks = lex(&text);
    let mut w = Walk {
        toks: &toks,
        inline: Vec::new(),
        module: module.clone(),
        refs: Vec::new(),
        reexports: Vec::new(),
        used: BTreeSet::new(),
        children: Vec::new(),
        depth: 0,
        enum_bodies: Vec::new(),
    };
    krate.modules.insert(module, file.to_string());
    w.run();
    for (name, r) in w.reexports {
        if w.used.contains(&name) {
            w.refs.push(r);
        }
    }
    krate.refs.entry(file.to_string()).or_default().extend(w.refs);
    for (child, dir_name) in w.children {
        let inline = &child[w.module.len().min(child.len())..child.len() - 1];
        let dir = child_dir(file, inline);
        let (rel, _) = find_child(src, &dir, &dir_name);
        parse_file(src, krate, &rel, child);
    }
}

impl Walk<'_> {
    fn ident(&self, i: usize) -> Option<&str> {
        match self.toks.get(i) {
            Some((Tok::Ident(s), _)) => Some(s),
            _ => None,
        }
    }

    fn is(&self, i: usize, t: &Tok) -> bool {
        self.toks.get(i).is_some_and(|(x, _)| x == t)
    }

    fn current(&self) -> ModPath {
        let mut m = self.module.clone();
        m.extend(self.inline.iter().map(|(n, _)| n.clone()));
        m
    }

    fn run(&mut self) {
        let (mut i, mut cfg_test) = (0, false);
        while i < self.toks.len() {
            let tok = self.toks[i].0.clone();
            if let Tok::Punct('#') = tok {
                if self.is(i + 1, &Tok::Punct('[')) {
                    let end = self.matching(i + 1);
                    cfg_test |= self.is_cfg_test(i + 2, end);
                    i = end + 1;
                    continue;
                }
            }
            if cfg_test {
                // The item under `#[cfg(test)]` ends at its body or its `;`.
                if tok == Tok::Punct('{') {
                    i = self.matching(i) + 1;
                    cfg_test = false;
                    continue;
                }
                cfg_test = !matches!(tok, Tok::Punct(';' | ',' | '}'));
            }
            i = self.step(i, &tok, cfg_test);
        }
    }

    /// One token outside a test item's body; returns where to go on.
    fn step(&mut self, i: usize, tok: &Tok, cfg_test: bool) -> usize {
        match tok {
            Tok::Punct('{') => {
                self.depth += 1;
                if i >= 2 && self.ident(i - 2) == Some("enum") {
                    self.enum_bodies.push(self.depth);
                }
            }
            Tok::Punct('}') => {
                if self.inline.last().is_some_and(|(_, d)| *d == self.depth) {
                    self.inline.pop();
                }
                if self.enum_bodies.last() == Some(&self.depth) {
                    self.enum_bodies.pop();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            Tok::Ident(w) if w == "mod" && !cfg_test => {
                if let Some(next) = self.module_decl(i) {
                    return next;
                }
            }
            Tok::Ident(w) if w == "use" && !cfg_test => return self.use_item(i),
            Tok::Ident(_) if !cfg_test => return self.path_expr(i),
            _ => {}
        }
        i + 1
    }

    /// The index of the bracket closing the one at `i`.
    fn matching(&self, i: usize) -> usize {
        let (open, close) = match self.toks[i].0 {
            Tok::Punct('[') => ('[', ']'),
            Tok::Punct('(') => ('(', ')'),
            _ => ('{', '}'),
        };
        let mut depth = 0usize;
        for k in i..self.toks.len() {
            match self.toks[k].0 {
                Tok::Punct(ch) if ch == open => depth += 1,
                Tok::Punct(ch) if ch == close => {
                    depth -= 1;
                    if depth == 0 {
                        return k;
                    }
                }
                _ => {}
            }
        }
        self.toks.len()
    }

    /// `cfg(test)`, `cfg(all(test, ...))`; not `cfg(not(test))`.
    fn is_cfg_test(&self, from: usize, to: usize) -> bool {
        if self.ident(from) != Some("cfg") {
            return false;
        }
        let words: Vec<&str> = (from..to).filter_map(|k| self.ident(k)).collect();
        words.contains(&"test") && !words.contains(&"not")
    }

    /// `mod name;` (a child file) or `mod name {` (an inline module); returns where to go on.
    fn module_decl(&mut self, i: usize) -> Option<usize> {
        let name = self.ident(i + 1)?.to_string();
        let mut path = self.current();
        path.push(name.clone());
        if self.is(i + 2, &Tok::Punct(';')) {
            self.children.push((path, name));
            return Some(i + 3);
        }
        if self.is(i + 2, &Tok::Punct('{')) {
            self.inline.push((name, self.depth + 1));
            return Some(i + 2);
        }
        None
    }

    /// A `use` item up to its `;`: its paths are references, or re-exports if it is `pub`.
    fn use_item(&mut self, i: usize) -> usize {
        let public = self.is_public(i);
        let end =
            (i..self.toks.len()).find(|&k| self.is(k, &Tok::Punct(';'))).unwrap_or(self.toks.len());
        let line = self.toks[i].1;
        let mut leaves = Vec::new();
        self.use_tree(i + 1, end, Vec::new(), &mut leaves);
        let module = self.current();
        for (segs, name) in leaves {
            let r = Ref { module: module.clone(), segs, line };
            match name {
                Some(name) if public => self.reexports.push((name, r)),
                None if public => {}
                _ => self.refs.push(r),
            }
        }
        end + 1
    }

    /// Whether the item whose keyword is at `i` is `pub`, `pub(crate)`, `pub(in path)`, ...
    fn is_public(&self, i: usize) -> bool {
        let mut k = i;
        while k > 0 {
            k -= 1;
            match &self.toks[k].0 {
                Tok::Ident(w) if w == "pub" => return true,
                Tok::Ident(w) if matches!(w.as_str(), "crate" | "super" | "self" | "in") => {}
                Tok::Punct('(' | ')') | Tok::Path => {}
                _ => return false,
            }
        }
        false
    }

    /// Expands `a::b::{c, d::e as f, self, *}` in `toks[from..to]` into full paths with the name
    /// each brings in (`None` for a glob).
    fn use_tree(
        &self,
        from: usize,
        to: usize,
        prefix: Vec<String>,
        out: &mut Vec<(Vec<String>, Option<String>)>,
    ) {
        let mut segs = prefix;
        let mut k = from;
        if self.is(k, &Tok::Path) {
            k += 1;
        }
        while k < to {
            match &self.toks[k].0 {
                Tok::Ident(w) if w == "as" => {
                    let alias = self.ident(k + 1).unwrap_or("_").to_string();
                    out.push((segs.clone(), Some(alias)));
                    return;
                }
                Tok::Ident(w) if w == "self" && !segs.is_empty() => {}
                Tok::Ident(w) => segs.push(w.clone()),
                Tok::Punct('*') => {
                    out.push((segs.clone(), None));
                    return;
                }
                Tok::Punct('{') => {
                    let close = self.matching(k).min(to);
                    self.use_group(k + 1, close, &segs, out);
                    return;
                }
                _ => {}
            }
            k += 1;
        }
        let name = segs.last().cloned();
        out.push((segs, name));
    }

    fn use_group(
        &self,
        from: usize,
        to: usize,
        prefix: &[String],
        out: &mut Vec<(Vec<String>, Option<String>)>,
    ) {
        let mut start = from;
        let mut nest = 0usize;
        for k in from..=to {
            match self.toks.get(k).map(|t| &t.0) {
                Some(Tok::Punct('{')) if k < to => nest += 1,
                Some(Tok::Punct('}')) if k < to => nest -= 1,
                Some(Tok::Punct(',')) if nest == 0 && k < to => {
                    self.use_tree(start, k, prefix.to_vec(), out);
                    start = k + 1;
                }
                _ if k == to && start < to => self.use_tree(start, to, prefix.to_vec(), out),
                _ => {}
            }
        }
    }

    /// A path `a::b::c` in code starting at `i`; returns the index after it. Paths after `::`
    /// (`std::x::y`'s tail) and single words only count as uses of a name.
    fn path_expr(&mut self, i: usize) -> usize {
        let mut segs = Vec::new();
        let mut k = i;
        while let Some(w) = self.ident(k) {
            segs.push(w.to_string());
            if self.is(k + 1, &Tok::Path) && self.ident(k + 2).is_some() {
                k += 2;
            } else {
                k += 1;
                break;
            }
        }
        let after_path = i > 0 && self.is(i - 1, &Tok::Path);
        // Only a path's head is a name in scope here: `WritePurpose::Wal` does not use an
        // imported `Wal`.
        let variant = self.enum_bodies.last() == Some(&self.depth)
            && (self.is(i - 1, &Tok::Punct('{'))
                || self.is(i - 1, &Tok::Punct(','))
                || self.is(i - 1, &Tok::Punct(']')));
        if !after_path && !variant {
            self.used.insert(segs[0].clone());
        }
        if segs.len() > 1 && !after_path {
            let line = self.toks[i].1;
            self.refs.push(Ref { module: self.current(), segs, line });
        }
        k
    }
}

// ---- Cycles ----------------------------------------------------------------------------------

/// The strongly connected components with more than one file (Tarjan), each sorted.
pub fn components(edges: &[Edge]) -> Vec<Vec<String>> {
    let mut adj: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in edges {
        adj.entry(&e.from).or_default().push(&e.to);
        adj.entry(&e.to).or_default();
    }
    let mut t = Tarjan {
        adj: &adj,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in adj.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    let mut out: Vec<Vec<String>> = t.out.into_iter().filter(|c| c.len() > 1).collect();
    for c in &mut out {
        c.sort();
    }
    out.sort();
    out
}

struct Tarjan<'a> {
    adj: &'a BTreeMap<&'a str, Vec<&'a str>>,
    index: HashMap<&'a str, usize>,
    low: HashMap<&'a str, usize>,
    stack: Vec<&'a str>,
    on: BTreeSet<&'a str>,
    out: Vec<Vec<String>>,
}

impl<'a> Tarjan<'a> {
    // Recursive: a crate has at most a few hundred files, far from the stack's limit.
    fn visit(&mut self, v: &'a str) {
        let n = self.index.len();
        self.index.insert(v, n);
        self.low.insert(v, n);
        self.stack.push(v);
        self.on.insert(v);
        let adj = self.adj;
        for &w in &adj[v] {
            if !self.index.contains_key(w) {
                self.visit(w);
                let low = self.low[v].min(self.low[w]);
                self.low.insert(v, low);
            } else if self.on.contains(w) {
                let low = self.low[v].min(self.index[w]);
                self.low.insert(v, low);
            }
        }
        if self.low[v] == self.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            self.out.push(comp);
        }
    }
}

/// For every edge inside a component, the shortest cycle through it, as `a.rs -> b.rs -> a.rs`,
/// each cycle once (rotated to start at its smallest file). Every edge that closes a cycle is in
/// at least one of them, so removing all the listed cycles' edges in turn reaches an acyclic graph.
pub fn cycles(edges: &[Edge]) -> Vec<String> {
    let comps = components(edges);
    let comp_of: HashMap<&str, usize> = comps
        .iter()
        .enumerate()
        .flat_map(|(n, c)| c.iter().map(move |f| (f.as_str(), n)))
        .collect();
    let inside: Vec<&Edge> = edges
        .iter()
        .filter(|e| {
            comp_of.get(e.from.as_str()).is_some_and(|c| comp_of.get(e.to.as_str()) == Some(c))
        })
        .collect();
    let mut seen = BTreeSet::new();
    for e in &inside {
        let Some(back) = shortest(&inside, &e.to, &e.from) else { continue };
        // `back` runs from the edge's head to its tail, which closes the cycle.
        let mut cycle: Vec<&str> = back.iter().map(String::as_str).collect();
        let min = (0..cycle.len()).min_by_key(|&k| cycle[k]).unwrap_or(0);
        cycle.rotate_left(min);
        let first = cycle[0];
        cycle.push(first);
        seen.insert(cycle.join(" -> "));
    }
    seen.into_iter().collect()
}

/// The files on a shortest path `from` .. `to` (both included), by breadth-first search.
fn shortest(edges: &[&Edge], from: &str, to: &str) -> Option<Vec<String>> {
    let mut prev: HashMap<&str, &str> = HashMap::new();
    let mut queue = VecDeque::from([from]);
    let mut seen = BTreeSet::from([from]);
    while let Some(v) = queue.pop_front() {
        if v == to {
            let mut path = vec![to.to_string()];
            let mut at = to;
            while let Some(&p) = prev.get(at) {
                path.push(p.to_string());
                at = p;
            }
            path.reverse();
            return Some(path);
        }
        for e in edges.iter().filter(|e| e.from == v) {
            if seen.insert(&e.to) {
                prev.insert(&e.to, v);
                queue.push_back(&e.to);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> BTreeMap<PathBuf, String> {
        list.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect()
    }

    fn pairs(edges: &[Edge]) -> Vec<(String, String)> {
        edges.iter().map(|e| (e.from.clone(), e.to.clone())).collect()
    }

    #[test]
    fn a_new_cycle_is_reported() {
        let src = files(&[
            ("lib.rs", "mod space;\npub use space::Location;\n"),
            ("space/mod.rs", "mod map;\nmod zone;\npub use map::Location;\n"),
            ("space/map.rs", "pub struct Location;\nfn f() { super::zone::grow(); }\n"),
            ("space/zone.rs", "use crate::space::map::Location;\npub fn grow() {}\n"),
        ]);
        let e = edges(&src, "lib.rs");
        assert_eq!(
            pairs(&e),
            [
                ("space/map.rs".into(), "space/zone.rs".into()),
                ("space/zone.rs".into(), "space/map.rs".into())
            ]
        );
        assert_eq!(cycles(&e), ["space/map.rs -> space/zone.rs -> space/map.rs"]);
    }

    #[test]
    fn declaring_and_reexporting_is_not_an_edge_but_using_is() {
        let src = files(&[
            ("lib.rs", "mod a;\nmod b;\npub use a::A;\npub(crate) use b::B;\npub struct Root;\n"),
            ("a.rs", "use crate::Root;\npub struct A;\n"),
            ("b.rs", "pub struct B;\n"),
        ]);
        assert_eq!(pairs(&edges(&src, "lib.rs")), [("a.rs".into(), "lib.rs".into())]);
        let src = files(&[
            ("lib.rs", "mod a;\npub use a::A;\npub struct Root;\nfn g() -> A { A }\n"),
            ("a.rs", "use crate::Root;\npub struct A;\n"),
        ]);
        let e = edges(&src, "lib.rs");
        assert_eq!(cycles(&e), ["a.rs -> lib.rs -> a.rs"]);
    }

    #[test]
    fn tests_comments_and_strings_are_not_edges() {
        let src = files(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            (
                "a.rs",
                "// crate::b::x\nconst S: &str = \"crate::b::y {\";\nconst C: char = '{';\n\
                 fn f<'a>(x: &'a u8) {}\n#[cfg(test)]\nmod tests { use crate::b::B; }\n",
            ),
            ("b.rs", "pub struct B;\nfn g() { crate::a::f(&0); }\n"),
        ]);
        assert_eq!(pairs(&edges(&src, "lib.rs")), [("b.rs".into(), "a.rs".into())]);
    }

    #[test]
    fn the_deepest_module_named_is_the_target() {
        let src = files(&[
            ("lib.rs", "mod x;\nmod y;\n"),
            ("x/mod.rs", "pub mod deep;\npub use deep::D;\n"),
            ("x/deep.rs", "pub struct D;\n"),
            ("y.rs", "use crate::x::{deep::{self, D as E}, D};\nmod inner { fn f() { super::super::x::deep::g(); } }\n"),
        ]);
        assert_eq!(
            pairs(&edges(&src, "lib.rs")),
            [("y.rs".into(), "x/deep.rs".into()), ("y.rs".into(), "x/mod.rs".into())]
        );
    }
}
