//! Aligned text tables and key–value blocks. Widths are display widths (a CJK job name from the
//! examples of docs/api.md takes two columns per character), and colour is applied after padding so escape codes
//! never shift a column.

use unicode_width::UnicodeWidthStr;

use super::Style;

/// One cell: its text and an optional colour (an SGR code such as `"32"`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Cell {
    pub text: String,
    pub color: Option<&'static str>,
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell { text, color: None }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::from(text.to_string())
    }
}

impl Cell {
    pub(crate) fn colored(text: impl Into<String>, color: Option<&'static str>) -> Cell {
        Cell {
            text: text.into(),
            color,
        }
    }
}

/// A table with a header row; columns are separated by two spaces.
pub(crate) struct Table {
    headers: Vec<&'static str>,
    rows: Vec<Vec<Cell>>,
    limits: Vec<Option<usize>>,
}

impl Table {
    pub(crate) fn new(headers: &[&'static str]) -> Table {
        Table {
            headers: headers.to_vec(),
            rows: Vec::new(),
            limits: vec![None; headers.len()],
        }
    }

    /// Cuts the cells of `column` to `width` columns, ending in `…`.
    pub(crate) fn limit(mut self, column: usize, width: usize) -> Table {
        if let Some(slot) = self.limits.get_mut(column) {
            *slot = Some(width);
        }
        self
    }

    /// Whether no row was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub(crate) fn row(&mut self, cells: Vec<Cell>) {
        let cells = cells
            .into_iter()
            .enumerate()
            .map(|(i, mut cell)| {
                cell.text = one_line(&cell.text);
                if let Some(Some(width)) = self.limits.get(i) {
                    cell.text = cut(&cell.text, *width);
                }
                cell
            })
            .collect();
        self.rows.push(cells);
    }

    /// The table, each line ending in a newline, without trailing spaces.
    pub(crate) fn render(&self, style: Style) -> String {
        let columns = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.width()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.text.width());
            }
        }
        let mut out = String::new();
        let header: Vec<Cell> = self
            .headers
            .iter()
            .map(|h| Cell::colored(*h, Some(super::BOLD)))
            .collect();
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate().take(columns) {
                let last = i + 1 == columns || row[i + 1..].iter().all(|c| c.text.is_empty());
                let pad = if last {
                    0
                } else {
                    widths[i].saturating_sub(cell.text.width())
                };
                line.push_str(&style.paint(cell.color, &cell.text));
                if last {
                    break;
                }
                line.push_str(&" ".repeat(pad + 2));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `Key  value` lines with the values aligned; a value's further lines are indented to match.
pub(crate) fn fields(rows: &[(&str, Cell)], style: Style) -> String {
    let width = rows.iter().map(|(k, _)| k.width()).max().unwrap_or(0);
    let mut out = String::new();
    for (key, value) in rows {
        let pad = " ".repeat(width - key.width() + 2);
        let indent = " ".repeat(width + 2);
        let text = value.text.replace('\n', &format!("\n{indent}"));
        out.push_str(&style.paint(Some(super::BOLD), key));
        out.push_str(&pad);
        out.push_str(&style.paint(value.color, &text));
        out.push('\n');
    }
    out
}

fn one_line(text: &str) -> String {
    if text.contains(['\n', '\r', '\t']) {
        text.split(['\n', '\r', '\t'])
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        text.to_string()
    }
}

/// `text` cut to `width` display columns, ending in `…` when cut.
pub(crate) fn cut(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_by_display_width() {
        let mut table = Table::new(&["ID", "NAME", "STATE"]);
        table.row(vec!["a".into(), "定时任务".into(), "active".into()]);
        table.row(vec!["long-id".into(), "x".into(), "paused".into()]);
        table.row(vec!["b".into(), "y".into(), "".into()]);
        assert_eq!(
            table.render(Style::plain()),
            "ID       NAME      STATE\n\
             a        定时任务  active\n\
             long-id  x         paused\n\
             b        y\n"
        );
    }

    #[test]
    fn colour_does_not_move_columns() {
        let mut table = Table::new(&["A", "B"]);
        table.row(vec![Cell::colored("ok", Some("32")), "x".into()]);
        let text = table.render(Style { color: true });
        assert!(text.contains("\u{1b}[32mok\u{1b}[0m  x"), "{text:?}");
    }

    #[test]
    fn long_cells_are_cut() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
        let mut table = Table::new(&["M"]).limit(0, 5);
        table.row(vec!["line one\nline two".into()]);
        assert_eq!(table.render(Style::plain()), "M\nline…\n");
    }
}
