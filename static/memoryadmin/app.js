// The page's only script of ours: the CSP allows no inline handlers, so behaviour lives here.
"use strict";

// <select data-navigate>: choosing an option whose value is a URL goes there (the team switch).
document.addEventListener("change", (event) => {
  const select = event.target;
  if (select instanceof HTMLSelectElement && select.hasAttribute("data-navigate") && select.value) {
    window.location.href = select.value;
  }
});

// <button data-copy="ID">: copies the text of the element with that id (token, client snippets).
document.addEventListener("click", async (event) => {
  const button = event.target instanceof Element ? event.target.closest("button[data-copy]") : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute("data-copy"));
  if (!source) return;
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(source.textContent);
    button.textContent = "Copied";
  } catch (error) {
    // No clipboard (an insecure origin, a refused permission): select the text to copy by hand.
    window.getSelection().selectAllChildren(source);
    button.textContent = "Select and copy";
  }
  window.setTimeout(() => { button.textContent = label; }, 2000);
});
