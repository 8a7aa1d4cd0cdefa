"""``kamera inspect result.json``: the JSON result browsed in the terminal (Textual).

Why Textual: a maintained TUI library with a tree widget, scrolling, keyboard bindings and a
headless test pilot, so the inspector is tested the way it is used.  It is an optional extra
(``kamera-cli[inspect]``): only this module imports it, and only ``kamera inspect`` imports this
module.  What each entry says is built by ``report.browse``; this module only draws it.  Labels and
texts are passed as ``rich.text.Text``, never as markup, so a name like ``[bold]`` stays literal.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Header, Static, Tree

from kamera_cli.model.result import CheckResult
from kamera_cli.report.browse import Entry, outline


class Inspector(App[None]):
    """A tree of scenarios, checks, counterexamples, steps, outcomes and states; the selection's text beside it."""

    TITLE = "kamera inspect"
    CSS = """
    #tree { width: 45%; border-right: solid $primary; }
    #detail-box { width: 55%; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[Any]] = [
        Binding("q", "quit", "quit"),
        Binding("e", "expand_all", "expand all under"),
        Binding("c", "collapse_all", "collapse"),
    ]

    def __init__(self, result: CheckResult, source: str = "") -> None:
        super().__init__()
        self.result = result
        self.source = source

    def compose(self) -> ComposeResult:
        yield Header()
        root = outline(self.result)
        tree: Tree[Entry] = Tree(Text(root.label), data=root, id="tree")
        tree.root.expand()
        with Horizontal():
            yield tree
            with VerticalScroll(id="detail-box"):
                yield Static(Text(root.detail), id="detail")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.source
        tree = self.query_one("#tree", Tree)
        self._fill(tree.root)
        tree.focus()

    def _fill(self, node: Any) -> None:
        """Add a node's children the first time it is opened (graphs can be large)."""
        if getattr(node, "_kamera_filled", False) or node.data is None:
            return
        node._kamera_filled = True
        for child in node.data.children():
            node.add(Text(child.label), data=child, allow_expand=child.more is not None)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Entry]) -> None:
        self._fill(event.node)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[Entry]) -> None:
        if event.node.data is not None:
            self.query_one("#detail", Static).update(Text(event.node.data.detail))
            self.query_one("#detail-box", VerticalScroll).scroll_home(animate=False)

    def action_expand_all(self) -> None:
        tree = self.query_one("#tree", Tree)
        node = tree.cursor_node
        if node is None:
            return

        def open_all(n: Any, depth: int) -> None:
            self._fill(n)
            n.expand()
            if depth < 4:
                for child in n.children:
                    if child.allow_expand:
                        open_all(child, depth + 1)

        open_all(node, 0)

    def action_collapse_all(self) -> None:
        node = self.query_one("#tree", Tree).cursor_node
        if node is not None:
            node.collapse_all()


def run(result: CheckResult, source: str = "") -> None:
    Inspector(result, source).run()
