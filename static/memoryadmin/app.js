// The page's only script of ours: the CSP allows no inline handlers, so behaviour lives here.
// Everything works without it; it only saves a click.
"use strict";

// <select data-submit-on-change>: choosing an option sends its form (the header's team switch).
document.addEventListener("change", (event) => {
  const select = event.target;
  if (select instanceof HTMLSelectElement && select.hasAttribute("data-submit-on-change") && select.value) {
    select.form.requestSubmit();
  }
});

// [data-js-hide]: a button only needed without JavaScript (the team switch's "Go").
for (const element of document.querySelectorAll("[data-js-hide]")) {
  element.hidden = true;
}
