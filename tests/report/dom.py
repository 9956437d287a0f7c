"""A small element tree of an HTML page (stdlib html.parser), enough for the report tests to ask
where an element sits: its ancestors, its children, whether a <details> around it is closed."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict
    parent: Element | None = None
    children: list = field(default_factory=list)
    text: str = ""

    def iter(self, tag: str | None = None):
        for child in self.children:
            if tag is None or child.tag == tag:
                yield child
            yield from child.iter(tag)

    def find_id(self, element_id: str) -> Element | None:
        return next((e for e in self.iter() if e.attrs.get("id") == element_id), None)

    def by_class(self, name: str) -> list:
        return [e for e in self.iter() if name in (e.attrs.get("class") or "").split()]

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def all_text(self) -> str:
        return self.text + "".join(child.all_text() for child in self.children)

    @property
    def hidden_by_details(self) -> bool:
        """Inside a closed <details> other than in its <summary>: not shown until clicked."""
        chain = [self, *self.ancestors()]
        for inner, outer in zip(chain, chain[1:]):
            if outer.tag == "details" and "open" not in outer.attrs and inner.tag != "summary":
                return True
        return False


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        element = Element(tag, dict(attrs), self.current)
        self.current.children.append(element)
        if tag not in _VOID:
            self.current = element

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Element(tag, dict(attrs), self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not self.root and node.tag != tag:
            node = node.parent
        if node is not self.root:
            self.current = node.parent

    def handle_data(self, data):
        self.current.text += data


def parse(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root
