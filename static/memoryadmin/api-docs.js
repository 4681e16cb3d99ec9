// Starts Redoc on /api/docs/ (templates/drf_spectacular/redoc.html): the CSP allows no inline script.
"use strict";

const container = document.getElementById("redoc-container");
Redoc.init(container.dataset.schemaUrl, JSON.parse(container.dataset.settings), container);
