// -- a review page's verdict (issue #29), in the panel chunk. The page of `annotate open` and of
// the plan gate (`#annotate-gate`, annotate/documents.py) is served until its verdict is in; once
// sent, the page says so and stops following the change feed, so it stays readable instead of
// going offline when its server ends.

const VERDICT_LABELS = {
  approve: "approve",
  approve_with_notes: "approve with notes",
  request_changes: "request changes"
};

function verdictSent(review) {
  const gate = document.getElementById("annotate-gate");
  if (!gate || !review.decision) return;
  feedAbort.abort();
  gate.textContent = `Decision sent: ${VERDICT_LABELS[review.decision] || review.decision} — you can close this tab.`;
  gate.hidden = false;
}
