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

// <input type="checkbox" data-select-all="NAME">: ticks or clears every checkbox NAME of its form.
document.addEventListener("change", (event) => {
  const box = event.target;
  if (!(box instanceof HTMLInputElement) || !box.hasAttribute("data-select-all")) return;
  const name = box.getAttribute("data-select-all");
  for (const other of box.form?.querySelectorAll(`input[type=checkbox][name="${name}"]`) ?? []) {
    other.checked = box.checked;
  }
});

// Keyboard shortcuts of the review pages (listed on each page): j/k next/previous, a approve,
// r reject (the comment first), x select in the queue. Never while typing in a field.
function typing(target) {
  return target instanceof HTMLElement &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
}

function queueStep(links, step) {
  const at = links.indexOf(document.activeElement);
  const next = links[Math.min(links.length - 1, Math.max(0, at + step))];
  if (at === -1 && step < 0) return;
  next?.focus();
  next?.closest("tr")?.scrollIntoView({ block: "nearest" });
}

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  if (typing(event.target)) return;
  const key = event.key;
  const queueLinks = Array.from(document.querySelectorAll("[data-queue] a[data-queue-link]"));
  const click = (name) => {
    const element = document.querySelector(`[data-shortcut="${name}"]`);
    if (element) { event.preventDefault(); element.click(); }
    return element;
  };
  if (queueLinks.length) {
    if (key === "j" || key === "k") {
      event.preventDefault();
      queueStep(queueLinks, key === "j" ? 1 : -1);
    } else if (key === "x" && queueLinks.includes(document.activeElement)) {
      const box = document.activeElement.closest("tr")?.querySelector("input[name=proposals]");
      if (box) { event.preventDefault(); box.checked = !box.checked; }
    }
    return;
  }
  if (key === "j") click("next");
  else if (key === "k") click("previous");
  else if (key === "a") click("approve");
  else if (key === "r") {
    const comment = document.querySelector("#decide-form textarea[name=comment]");
    if (comment && !comment.value.trim()) {
      event.preventDefault();
      comment.focus();
      comment.setAttribute("aria-describedby", "reject-hint");
      document.getElementById("reject-hint")?.removeAttribute("hidden");
      return;
    }
    click("reject");
  }
});

// [data-js-hide]: a button only needed without JavaScript (the team switch's "Go").
for (const element of document.querySelectorAll("[data-js-hide]")) {
  element.hidden = true;
}
