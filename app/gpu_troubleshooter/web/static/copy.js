// Progressive enhancement only: adds "Copy" buttons to code blocks. Everything works without it.
document.addEventListener("DOMContentLoaded", function () {
  // Without TROUBLESHOOT_BASE_URL the server shows the private link as a path
  // (it never trusts the Host header); the address in the user's own browser completes it.
  var share = document.getElementById("share-url");
  if (share && share.value.charAt(0) === "/") share.value = window.location.origin + share.value;
  if (!navigator.clipboard) return;
  document.querySelectorAll(".code").forEach(function (box) {
    var code = box.querySelector("code");
    var btn = document.createElement("button");
    btn.type = "button"; btn.className = "copy"; btn.textContent = "Copy";
    btn.setAttribute("aria-label", "Copy this code");
    btn.addEventListener("click", function () {
      navigator.clipboard.writeText(code.textContent).then(function () {
        btn.textContent = "Copied"; setTimeout(function () { btn.textContent = "Copy"; }, 1500);
      });
    });
    box.appendChild(btn);
  });
});
