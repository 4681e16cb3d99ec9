// The page's only script of ours: the CSP allows no inline handlers, so behaviour lives here.
"use strict";

// <select data-navigate>: choosing an option whose value is a URL goes there (the team switch).
document.addEventListener("change", (event) => {
  const select = event.target;
  if (select instanceof HTMLSelectElement && select.hasAttribute("data-navigate") && select.value) {
    window.location.href = select.value;
  }
});
