//! `diagram()`: a graph drawn as box-drawing text, exactly as spec §2.4 lays it out.

use std::collections::BTreeMap;

use unicode_width::UnicodeWidthChar as _;

use crate::topology::{Condition, Topology};

const UP: u8 = 1;
const DOWN: u8 = 2;
const LEFT: u8 = 4;
const RIGHT: u8 = 8;

/// Display width: East-Asian wide and fullwidth characters take two columns.
fn char_width(c: char) -> usize {
    if c.width() == Some(2) { 2 } else { 1 }
}

fn text_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// What a cell holds: a text character (or the hidden second half of a wide one), or strokes.
#[derive(Clone, Copy)]
enum Cell {
    Text(char),
    Covered,
    Strokes(u8),
}

#[derive(Default)]
struct Canvas {
    cells: BTreeMap<(usize, usize), Cell>,
}

impl Canvas {
    fn text(&mut self, row: usize, col: usize, text: &str) {
        let mut col = col;
        for c in text.chars() {
            self.cells.insert((row, col), Cell::Text(c));
            if char_width(c) == 2 {
                self.cells.insert((row, col + 1), Cell::Covered);
                col += 2;
            } else {
                col += 1;
            }
        }
    }

    fn stroke(&mut self, row: usize, col: usize, mask: u8) {
        match self.cells.entry((row, col)).or_insert(Cell::Strokes(0)) {
            Cell::Strokes(m) => *m |= mask,
            Cell::Text(_) | Cell::Covered => {}
        }
    }

    fn vertical(&mut self, col: usize, a: usize, b: usize) {
        for row in a..=b {
            let mut mask = 0;
            if row < b {
                mask |= DOWN;
            }
            if row > a {
                mask |= UP;
            }
            self.stroke(row, col, mask);
        }
    }

    fn horizontal(&mut self, row: usize, a: usize, b: usize) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        for col in lo..=hi {
            let mut mask = 0;
            if col < hi {
                mask |= RIGHT;
            }
            if col > lo {
                mask |= LEFT;
            }
            self.stroke(row, col, mask);
        }
    }

    fn render(&self) -> String {
        let Some(rows) = self.cells.keys().map(|(r, _)| *r).max() else {
            return String::new();
        };
        let cols = self.cells.keys().map(|(_, c)| *c).max().unwrap_or(0);
        let mut lines = Vec::with_capacity(rows + 1);
        for row in 0..=rows {
            let mut line = String::new();
            for col in 0..=cols {
                match self.cells.get(&(row, col)) {
                    None => line.push(' '),
                    Some(Cell::Covered) => {}
                    Some(Cell::Text(c)) => line.push(*c),
                    Some(Cell::Strokes(mask)) => line.push(glyph(*mask)),
                }
            }
            lines.push(line.trim_end().to_owned());
        }
        lines.join("\n")
    }
}

fn glyph(mask: u8) -> char {
    match mask {
        0 => '·',
        m if m == UP || m == DOWN || m == UP | DOWN => '│',
        m if m == LEFT || m == RIGHT || m == LEFT | RIGHT => '─',
        m if m == DOWN | RIGHT => '╭',
        m if m == DOWN | LEFT => '╮',
        m if m == UP | RIGHT => '╰',
        m if m == UP | LEFT => '╯',
        m if m == UP | DOWN | RIGHT => '├',
        m if m == UP | DOWN | LEFT => '┤',
        m if m == UP | LEFT | RIGHT => '┴',
        m if m == DOWN | LEFT | RIGHT => '┬',
        _ => '┼',
    }
}

/// An item of a layer: a real node or a dummy that carries a long edge through.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Item {
    Node(usize),
    Dummy(usize),
}

struct Segment {
    source: Item,
    target: Item,
    conditional: bool,
}

/// Where everything goes: layers of items, the edge segments, columns and rows.
struct Layout<'a> {
    topology: &'a Topology,
    level: Vec<usize>,
    dummies: Vec<usize>,
    layers: Vec<Vec<Item>>,
    segments: Vec<Segment>,
    node_centres: Vec<usize>,
    dummy_centres: Vec<usize>,
    tops: Vec<usize>,
}

impl<'a> Layout<'a> {
    fn new(topology: &'a Topology) -> Self {
        let n = topology.nodes().len();
        let predecessors = topology.predecessors();
        // Layers: the longest forward path from a source.
        let mut level = vec![0_usize; n];
        for _ in 0..n {
            for (target, preds) in predecessors.iter().enumerate() {
                for (source, _) in preds {
                    level[target] = level[target].max(level[*source] + 1);
                }
            }
        }
        let depth = level.iter().copied().max().unwrap_or(0) + 1;
        let mut layers: Vec<Vec<Item>> = vec![Vec::new(); depth];
        for (node, &l) in level.iter().enumerate() {
            layers[l].push(Item::Node(node));
        }
        // Edges: sources in registration order, each ordered by target registration order;
        // a long edge goes through one dummy per layer it crosses.
        let mut outgoing: Vec<Vec<(usize, bool)>> = vec![Vec::new(); n];
        for (target, preds) in predecessors.iter().enumerate() {
            for (source, condition) in preds {
                outgoing[*source].push((target, condition.is_some()));
            }
        }
        let mut segments = Vec::new();
        let mut dummies = Vec::new();
        for (source, targets) in outgoing.iter().enumerate() {
            for &(target, conditional) in targets {
                let span = level[target] - level[source];
                let mut from = Item::Node(source);
                for step in 1..span {
                    let dummy = Item::Dummy(dummies.len());
                    dummies.push(level[source] + step);
                    layers[level[source] + step].push(dummy);
                    segments.push(Segment {
                        source: from,
                        target: dummy,
                        conditional: conditional && step == 1,
                    });
                    from = dummy;
                }
                segments.push(Segment {
                    source: from,
                    target: Item::Node(target),
                    conditional: conditional && span == 1,
                });
            }
        }
        let mut layout = Self {
            topology,
            level,
            dummies,
            layers,
            segments,
            node_centres: vec![0; n],
            dummy_centres: Vec::new(),
            tops: vec![0; depth],
        };
        layout.place();
        layout
    }

    /// Columns (each layer centred on the widest) and rows (three for the boxes, one track
    /// per segment leaving the layer, one blank).
    fn place(&mut self) {
        self.dummy_centres = vec![0; self.dummies.len()];
        let total = |layout: &Self, layer: &[Item]| -> usize {
            layer.iter().map(|&i| layout.width(i)).sum::<usize>()
                + 3 * layer.len().saturating_sub(1)
        };
        let widest = self
            .layers
            .iter()
            .map(|l| total(self, l))
            .max()
            .unwrap_or(0);
        for i in 0..self.layers.len() {
            let mut x = (widest - total(self, &self.layers[i])) / 2;
            for j in 0..self.layers[i].len() {
                let item = self.layers[i][j];
                let width = self.width(item);
                match item {
                    Item::Node(node) => self.node_centres[node] = x + width / 2,
                    Item::Dummy(d) => self.dummy_centres[d] = x + width / 2,
                }
                x += width + 3;
            }
        }
        let mut row = 0;
        for i in 0..self.tops.len() {
            self.tops[i] = row;
            let tracks = self
                .segments
                .iter()
                .filter(|s| self.layer(s.source) == i)
                .count();
            row += 3 + tracks + 1;
        }
    }

    fn layer(&self, item: Item) -> usize {
        match item {
            Item::Node(node) => self.level[node],
            Item::Dummy(d) => self.dummies[d],
        }
    }

    fn width(&self, item: Item) -> usize {
        match item {
            Item::Node(node) => text_width(&self.topology.nodes()[node].name) + 4,
            Item::Dummy(_) => 1,
        }
    }

    fn centre(&self, item: Item) -> usize {
        match item {
            Item::Node(node) => self.node_centres[node],
            Item::Dummy(d) => self.dummy_centres[d],
        }
    }

    fn top(&self, item: Item) -> usize {
        self.tops[self.layer(item)]
    }

    fn left(&self, node: usize) -> usize {
        self.centre(Item::Node(node)) - self.width(Item::Node(node)) / 2
    }

    fn right(&self, node: usize) -> usize {
        self.left(node) + self.width(Item::Node(node)) - 1
    }

    fn draw_boxes(&self, canvas: &mut Canvas) {
        for &item in self.layers.iter().flatten() {
            let (top, middle) = (self.top(item), self.centre(item));
            match item {
                Item::Dummy(_) => canvas.vertical(middle, top, top + 2),
                Item::Node(node) => {
                    let info = &self.topology.nodes()[node];
                    let left = self.left(node);
                    let rule = if info.start || info.end { "═" } else { "─" };
                    let bar = rule.repeat(self.width(item) - 2);
                    canvas.text(top, left, &format!("╭{bar}╮"));
                    canvas.text(top + 1, left, &format!("│ {} │", info.name));
                    canvas.text(top + 2, left, &format!("╰{bar}╯"));
                }
            }
        }
    }

    /// Each segment on a track row of its own below its source's layer.
    fn draw_segments(&self, canvas: &mut Canvas) {
        for (i, &top) in self.tops.iter().enumerate() {
            let bottom = top + 2;
            let gap = self.segments.iter().filter(|s| self.layer(s.source) == i);
            for (k, segment) in gap.enumerate() {
                let track = bottom + 1 + k;
                let (from, to) = (self.centre(segment.source), self.centre(segment.target));
                let target_top = self.top(segment.target);
                canvas.stroke(bottom + 1, from, UP);
                canvas.vertical(from, bottom + 1, track);
                canvas.horizontal(track, from, to);
                canvas.vertical(to, track, target_top - 1);
                if let Item::Node(_) = segment.target {
                    let arrow = if segment.conditional { "▽" } else { "▼" };
                    canvas.text(target_top - 1, to, arrow);
                }
            }
        }
    }

    /// Loop edges up the right margin, one column pair each; the notes that list them.
    fn draw_loops(&self, canvas: &mut Canvas) -> Vec<String> {
        let nodes = self.topology.nodes();
        let count = nodes.len();
        let rightmost = (0..count).map(|node| self.right(node)).max().unwrap_or(0);
        let blocked = |node: usize| {
            (0..count).any(|other| {
                other != node
                    && self.level[other] == self.level[node]
                    && self.left(other) > self.right(node)
            })
        };
        let mut listed = Vec::new();
        for (j, lp) in self.topology.loops().iter().enumerate() {
            let when = match &lp.condition {
                Some(Condition::Named(name)) => format!(" when {name}"),
                Some(Condition::Anonymous) => " (conditional)".to_owned(),
                None => String::new(),
            };
            let mut line = format!(
                "  ↺ {} → {}{when}",
                nodes[lp.source].name, nodes[lp.target].name
            );
            if blocked(lp.source) || blocked(lp.target) {
                line.push_str("  (not drawn: no clear margin)");
            } else {
                let margin = rightmost + 3 + 2 * j;
                let src_row = self.top(Item::Node(lp.source)) + 1;
                let dst_row = self.top(Item::Node(lp.target)) + 1;
                canvas.horizontal(src_row, self.right(lp.source) + 1, margin);
                canvas.vertical(margin, dst_row.min(src_row), dst_row.max(src_row));
                canvas.text(dst_row, self.right(lp.target) + 1, "◀");
                canvas.horizontal(dst_row, self.right(lp.target) + 2, margin);
            }
            listed.push(line);
        }
        listed
    }
}

/// The graph as text: layers top to bottom by wave, `═` for start and end nodes, `▽` for a
/// conditional edge and `▼` for an unconditional one, loop edges up the right margin (or a
/// note when no margin is clear). Empty graph: `""`. No trailing newline.
pub(crate) fn draw(topology: &Topology) -> String {
    if topology.nodes().is_empty() {
        return String::new();
    }
    let layout = Layout::new(topology);
    let mut canvas = Canvas::default();
    layout.draw_boxes(&mut canvas);
    layout.draw_segments(&mut canvas);
    let mut footer = layout.draw_loops(&mut canvas);
    if layout.segments.iter().any(|s| s.conditional) {
        footer.push("  ▽ conditional edge".to_owned());
    }
    let body = canvas.render();
    if footer.is_empty() {
        body
    } else {
        format!("{body}\n\n{}", footer.join("\n"))
    }
}
