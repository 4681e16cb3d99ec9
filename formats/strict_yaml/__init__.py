"""Strict YAML mappings for front matter: a libyaml fast path and the ruamel.yaml reference.

`formats.frontmatter` is the public face. `fast` reads with libyaml's C parser (through
PyYAML's binding; the plainest sources by `lines`' regular expressions) and checks every rule
on its events or nodes; whenever it is not sure a
document is accepted exactly as the reference would accept it, it defers to `reference` (the
pure ruamel.yaml reader), which then gives the one exact error with its line.
"""
