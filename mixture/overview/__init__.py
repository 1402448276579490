"""The static overview page of a store (`mixture overview STORE --out DIR`): one self-contained HTML file that
mirrors the published cluster-overview page, readable from a bucket with no server.

Modules: `numbers` (how every number is written), `labels` (readable domain labels from the top terms, shared with
the explorer), `page` (the page's content from the accounting layer and an
optional plan), `render` (Jinja2 template, inline CSS and JS, atomic write), `cli` (the command). This file
imports none of them, so that `mixture.composition.numbers` can be used without loading the rest.
"""
