"""Review pages, one module per page group (queue, proposals, repositories, settings)."""
