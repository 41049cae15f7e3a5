// The browser side of the newOS4 chat contract: one conversation per browser token,
// posted through post.php and read back by polling poll.php with since=<cursor>.
(function () {
  "use strict";

  const POST_URL = "api/chat/post.php";
  const POLL_URL = "api/chat/poll.php";
  const TOKEN_KEY = "newos4.chat.token";   // localStorage: the conversation survives reloads
  const DRAFT_KEY = "newos4.chat.draft";   // sessionStorage: so does a half-typed message
  const REQUEST_TIMEOUT_MS = 15000;
  const HIDDEN_TAB_MS = 60000;             // a tab in the background looks once a minute
  const AUTHORS = {operator: "You", agent: "Assistant", hermes: "Hermes"};
  // The relay's approval request begins with this line and lists the choices offered to the
  // person (Hermes' own, `always` only when the host allows it) as
  // lines "- `word`: explanation"; the page offers them as buttons (see README, the chat page).
  const APPROVAL_MARKER = "Hermes asks before running a command:";
  // The relay's one message to a conversation the host has not let in (relay/access.py).
  const NOTICE_MARKER = "This conversation cannot reach Hermes yet.";
  const CHOICE_LINE = /^- `(once|session|always|deny)`: /gm;
  const CHOICE_LABELS = {once: "Allow once", session: "Allow for this conversation",
    always: "Always allow", deny: "Deny"};

  // Poll delays: often while an answer is on its way, backing off when idle or failing, and
  // when an answer is long overdue (Hermes down, a question given up).
  const LONG_WAIT_MS = 120000;
  const awaitingDelay = backoff(1000, 3000, 1.25);
  const overdueDelay = backoff(3000, 10000, 1.5);
  const idleDelay = backoff(2000, 30000, 2);
  // Until the host lets the conversation in, its question waits, and goes to Hermes the moment
  // the host does: the page looks as for a slow answer, not as for an idle conversation.
  const hostDelay = backoff(2000, 10000, 1.5);
  const errorDelay = backoff(2000, 60000, 2);

  let ephemeral = false;
  const $ = (id) => document.getElementById(id);
  const ui = {
    scroll: $("scroll"), empty: $("empty"), log: $("log"), status: $("status"),
    alert: $("alert"), form: $("composer"), input: $("message"), thread: $("thread"),
    restart: $("restart"), confirm: $("confirm-restart"),
  };
  const state = {
    token: loadToken(), cursor: 0, awaiting: false, awaitingSince: 0, seen: new Set(),
    timer: null, polling: false, pollAgain: false, sending: false, alertSource: "",
  };

  function backoff(min, max, factor) {
    let next = min;
    return {
      next() {
        const delay = next;
        next = Math.min(max, next * factor);
        return Math.round(delay * (0.9 + Math.random() * 0.2));  // jitter: tabs drift apart
      },
      reset() { next = min; },
    };
  }

  function mintToken() {
    const bytes = new Uint8Array(32);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function loadToken() {
    let token = null;
    try { token = localStorage.getItem(TOKEN_KEY); } catch (e) { /* storage blocked */ }
    if (/^[0-9a-f]{64}$/.test(token || "")) return token;
    token = mintToken();
    try {
      localStorage.setItem(TOKEN_KEY, token);
    } catch (e) {
      ephemeral = true;  // storage blocked: the token lives as long as this page view
    }
    return token;
  }

  function storeDraft() {
    try { sessionStorage.setItem(DRAFT_KEY, ui.input.value); } catch (e) { /* best effort */ }
  }

  function restoreDraft() {
    try { ui.input.value = sessionStorage.getItem(DRAFT_KEY) || ""; } catch (e) { /* none */ }
    fitInput();
  }

  function fitInput() {
    ui.input.style.height = "auto";
    ui.input.style.height = Math.min(ui.input.scrollHeight + 2, 200) + "px";
  }

  // --- talking to the server -------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, error, retryAfter) {
      super(error || (status ? "HTTP " + status : "network error"));
      this.status = status;
      this.error = error;
      this.retryAfter = retryAfter;
    }
  }

  async function call(url, options) {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), REQUEST_TIMEOUT_MS);
    let response;
    try {
      response = await fetch(url, {...options, signal: abort.signal, cache: "no-store",
        headers: {...options.headers, "X-Chat-Token": state.token}});
    } catch (e) {
      throw new ApiError(0, e.name === "AbortError" ? "no answer in time" : "");
    } finally {
      clearTimeout(timer);
    }
    let body = null;
    try { body = await response.json(); } catch (e) { /* not our JSON: a proxy's page */ }
    if (!response.ok || !body || body.success !== true) {
      const retryAfter = parseInt(response.headers.get("Retry-After") || "", 10);
      throw new ApiError(response.status, body && body.error,
                         Number.isFinite(retryAfter) ? retryAfter : null);
    }
    return body;
  }

  function inWords(seconds) {
    if (seconds < 60) return seconds + (seconds === 1 ? " second" : " seconds");
    const minutes = Math.ceil(seconds / 60);
    return minutes + (minutes === 1 ? " minute" : " minutes");
  }

  function sendFailure(err) {
    const said = err.error;  // the server's own words, when it gave any
    switch (err.status) {
      case 0: return "Not sent: the chat server could not be reached" +
        (said ? " (" + said + ")" : "") + ". Try again.";
      case 413: return "Not sent: " + (said || "the message is too long") +
        ". Shorten it and send again.";
      case 429: return "Not sent: " + (said || "too many messages") + ". Try again in " +
        inWords(err.retryAfter == null ? 60 : err.retryAfter) + ".";
      case 507: return "Not sent: the chat is full right now (" + (said || "thread limit reached") +
        "). Try again later.";
      case 401: return "Not sent: this browser's chat token was refused (" + said + ").";
      case 400: return "Not sent: " + (said || "the server refused the message") + ".";
      default: return "Not sent: " + (said || "the server failed") + " (HTTP " + err.status +
        "). Try again.";
    }
  }

  // --- Markdown, safely ----------------------------------------------------------------------
  // Hermes and the in-page assistant write Markdown. marked turns it into HTML with every raw
  // HTML tag shown as text (an answer may quote HTML; it must never become markup), then
  // DOMPurify keeps only the elements Markdown makes and links to http(s) and mailto. The
  // person's own text is shown exactly as typed.

  const MARKUP = {
    ALLOWED_TAGS: ["p", "br", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol",
      "li", "a", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr",
      "th", "td"],
    ALLOWED_ATTR: ["href", "title", "start", "align"],
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
    RETURN_DOM_FRAGMENT: true,
  };
  const markdown = makeMarkdown();

  function escapeHtml(text) {
    return text.replace(/[&<>"']/g, (c) =>
      ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);
  }

  function makeMarkdown() {
    const {marked, DOMPurify} = window;
    if (!marked || !DOMPurify || !DOMPurify.isSupported) return null;  // plain text, then
    DOMPurify.addHook("afterSanitizeAttributes", (node) => {
      if (node.tagName === "A" && node.hasAttribute("href")) {
        node.setAttribute("target", "_blank");  // away from the chat, which keeps running
        node.setAttribute("rel", "noopener noreferrer");
      }
    });
    return new marked.Marked({
      gfm: true,
      breaks: true,  // a line break in a chat message is a line break, as on GitHub
      renderer: {
        html({text, block}) {
          const shown = escapeHtml(text);
          return block ? "<p>" + shown.trim().replace(/\n/g, "<br>") + "</p>" : shown;
        },
        image({href, title, text}) {
          // The page loads no image from elsewhere: an image is a link to it, named by its alt.
          const label = text || href;  // escaped by marked's text renderer
          return this.link({href, title, tokens: [{type: "text", raw: label, text: label}]});
        },
        checkbox({checked}) { return checked ? "\u2611 " : "\u2610 "; },
      },
    });
  }

  function renderText(target, message) {
    if (message.author === "operator" || !markdown) {
      target.textContent = message.text;
      return;
    }
    try {
      const html = markdown.parse(message.text).trim();
      target.classList.add("markdown");
      target.replaceChildren(DOMPurify.sanitize(html, MARKUP));
    } catch (e) {
      target.textContent = message.text;  // whatever failed, the words are still shown
    }
  }

  // --- approval requests ----------------------------------------------------------------------

  function offeredChoices(message) {
    if (message.author !== "hermes" || !message.text.startsWith(APPROVAL_MARKER)) return [];
    return Array.from(message.text.matchAll(CHOICE_LINE), (match) => match[1]);
  }

  function pendingRequest() {
    // The request still waiting for the person: the latest message, or followed only by the
    // in-page AI's messages, which never decide (the relay leaves the request waiting).
    let item = ui.log.lastElementChild;
    while (item && item.dataset.author === "agent") {
      item = item.previousElementSibling;
    }
    return item && item.choices ? item : null;
  }

  function waitingForTheHost() {
    // Hermes' latest word is the relay's notice: nothing written since reached Hermes, so no
    // answer is on its way until the host lets this conversation in.
    let item = ui.log.lastElementChild;
    while (item && item.dataset.author !== "hermes") item = item.previousElementSibling;
    return Boolean(item && item.notice);
  }

  function offerChoices() {
    // Buttons only on the pending request: once the person or Hermes wrote after it, it is
    // answered (or given up), and a late click would be read as a new message.
    const last = pendingRequest();
    ui.log.querySelectorAll(".choices").forEach((group) => {
      if (group.parentElement !== last) group.remove();
    });
    if (!last || last.querySelector(".choices")) return;
    const group = document.createElement("div");
    group.className = "choices";
    group.setAttribute("role", "group");
    group.setAttribute("aria-label", "Your decision");
    for (const word of last.choices) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "choice";
      button.dataset.choice = word;
      button.textContent = CHOICE_LABELS[word];
      button.addEventListener("click", () => choose(group, word));
      group.append(button);
    }
    last.append(group);
  }

  async function choose(group, word) {
    const buttons = group.querySelectorAll("button");
    const hadFocus = group.contains(document.activeElement);
    buttons.forEach((button) => { button.disabled = true; });
    const sent = await postText(word);
    if (sent) {
      if (hadFocus && !matchMedia("(pointer: coarse)").matches) ui.input.focus();
    } else {
      buttons.forEach((button) => { button.disabled = false; });
    }
  }

  // --- the conversation ---------------------------------------------------------------------

  function formatTime(epoch) {
    const when = new Date(epoch);
    const today = new Date().toDateString() === when.toDateString();
    return today ? when.toLocaleTimeString([], {hour: "2-digit", minute: "2-digit"})
      : when.toLocaleString([], {dateStyle: "medium", timeStyle: "short"});
  }

  function addMessage(message) {
    if (state.seen.has(message.id)) return;
    state.seen.add(message.id);
    const item = document.createElement("article");
    item.className = "msg";
    item.dataset.author = message.author;
    item.dataset.epoch = String(message.epoch);
    item.dataset.id = message.id;
    const meta = document.createElement("p");
    meta.className = "who";
    const time = document.createElement("time");
    time.dateTime = message.ts;
    time.textContent = formatTime(message.epoch);
    meta.append(AUTHORS[message.author] || message.author, " · ", time);
    const text = document.createElement("div");
    text.className = "text";
    renderText(text, message);
    item.append(meta, text);
    const choices = offeredChoices(message);
    if (choices.length) {
      item.classList.add("approval");
      item.choices = choices;
    }
    item.notice = message.author === "hermes" && message.text.startsWith(NOTICE_MARKER);

    const stick = nearBottom();
    let after = ui.log.lastElementChild;  // keep the log in epoch order whatever arrives first
    while (after && Number(after.dataset.epoch) > message.epoch) {
      after = after.previousElementSibling;
    }
    if (after) after.after(item); else ui.log.prepend(item);
    ui.empty.hidden = true;
    if (stick || message.author === "operator") ui.scroll.scrollTop = ui.scroll.scrollHeight;
  }

  function nearBottom() {
    return ui.scroll.scrollHeight - ui.scroll.scrollTop - ui.scroll.clientHeight < 80;
  }

  function setAwaiting(awaiting) {
    if (awaiting && !state.awaiting) {
      state.awaitingSince = Date.now();
      awaitingDelay.reset();
      overdueDelay.reset();
    }
    state.awaiting = awaiting;
    say(ui.status, pendingRequest() ? "Hermes is waiting for your decision."
      : waitingForTheHost() ? "Waiting for the host to let this conversation in (see above)."
      : !awaiting ? ""
      : overdue() ? "Still waiting for Hermes; the answer will appear here when it is ready."
      : "Hermes is working on an answer…");
  }

  function say(region, text) {
    // A live region announces every change, even to the same words: touch it only to change it.
    if (region.textContent !== text) region.textContent = text;
  }

  function overdue() {
    return state.awaiting && Date.now() - state.awaitingSince > LONG_WAIT_MS;
  }

  function showAlert(text, source) {
    // A refused send is news each time, even in the same words; a poll failure only once.
    if (source === "send") ui.alert.textContent = text; else say(ui.alert, text);
    state.alertSource = source;
  }

  function clearAlert(source) {
    if (!source || state.alertSource === source) showAlert("", "");
  }

  // --- polling ------------------------------------------------------------------------------

  function schedule(delay) {
    clearTimeout(state.timer);
    state.timer = setTimeout(poll, document.hidden ? Math.max(delay, HIDDEN_TAB_MS) : delay);
  }

  async function poll() {
    clearTimeout(state.timer);
    if (state.polling) { state.pollAgain = true; return; }
    state.polling = true;
    const token = state.token;
    let delay;
    try {
      const body = await call(POLL_URL + "?since=" + state.cursor, {method: "GET"});
      delay = token === state.token ? showPolled(body) : 0;  // else: a new conversation began
    } catch (err) {
      delay = errorDelay.next();
      if (state.alertSource !== "send") {
        showAlert("Cannot reach the chat server (" + err.message + "). Trying again " +
                  "automatically; nothing you sent is lost.", "poll");
      }
    } finally {
      state.polling = false;
    }
    if (state.pollAgain) { state.pollAgain = false; delay = 0; }
    schedule(delay);
  }

  function showPolled(body) {
    // Returns how long to wait before the next poll.
    const stick = nearBottom() || state.cursor === 0;  // a first look starts at the newest
    body.messages.forEach(addMessage);
    offerChoices();
    if (stick) ui.scroll.scrollTop = ui.scroll.scrollHeight;
    state.cursor = Math.max(state.cursor, body.cursor);
    ui.thread.textContent = "Conversation " + body.thread +
      (ephemeral ? " (storage is blocked: a reload starts a new one)" : "");
    ui.log.setAttribute("aria-busy", "false");
    if (body.messages.length) {
      idleDelay.reset();
      hostDelay.reset();
    }
    setAwaiting(body.awaiting);
    errorDelay.reset();
    clearAlert("poll");
    return waitingForTheHost() ? hostDelay.next()
      : !body.awaiting ? idleDelay.next()
      : overdue() ? overdueDelay.next() : awaitingDelay.next();
  }

  // --- sending ------------------------------------------------------------------------------

  async function postText(text) {
    // Post `text` as the person's message; true when the server took it. A refusal is shown
    // in the alert region.
    if (state.sending) return false;
    state.sending = true;
    ui.form.setAttribute("aria-busy", "true");
    ui.restart.disabled = true;  // the message belongs to the conversation it was typed in
    const token = state.token;
    try {
      const sent = await call(POST_URL, {method: "POST",
        headers: {"Content-Type": "application/json"},
        body: JSON.stringify({text: text, kind: "operator"})});
      if (token !== state.token) return true;  // another tab started a new conversation
      addMessage({id: sent.id, epoch: sent.epoch, ts: sent.ts, author: "operator", text: text});
      offerChoices();
      clearAlert();
      setAwaiting(true);
      idleDelay.reset();
      poll();
      return true;
    } catch (err) {
      showAlert(sendFailure(err), "send");
      return false;
    } finally {
      state.sending = false;
      ui.form.removeAttribute("aria-busy");
      ui.restart.disabled = false;
    }
  }

  async function send(event) {
    event.preventDefault();
    if (state.sending) return;
    const text = ui.input.value;
    if (text === "") {
      showAlert("Type a message first.", "send");
      ui.input.focus();
      return;
    }
    if (await postText(text)) {
      // Only what was sent leaves the box: anything typed meanwhile stays.
      if (ui.input.value.startsWith(text)) ui.input.value = ui.input.value.slice(text.length);
      storeDraft();
      fitInput();
    }  // else the text stays in the box, untouched
  }

  // --- a new conversation -----------------------------------------------------------------
  // A fresh token is a fresh thread: Hermes starts over. The old thread is left on the server
  // (retention removes it in time); this browser just stops asking for it.

  function startOver(token) {
    state.token = token;
    state.cursor = 0;
    state.seen.clear();
    ui.log.replaceChildren();
    ui.log.setAttribute("aria-busy", "true");
    ui.empty.hidden = false;
    ui.thread.textContent = "";
    clearAlert();
    setAwaiting(false);
    idleDelay.reset();
    errorDelay.reset();
    poll();
  }

  function newConversation() {
    const token = mintToken();
    try {
      localStorage.setItem(TOKEN_KEY, token);
      ephemeral = false;
    } catch (e) {
      ephemeral = true;
    }
    startOver(token);
    ui.input.focus();
  }

  ui.restart.addEventListener("click", () => {
    if (!ui.log.childElementCount) { newConversation(); return; }  // nothing to leave behind
    ui.confirm.returnValue = "";
    ui.confirm.showModal();
  });
  $("restart-yes").addEventListener("click", () => ui.confirm.close("new"));
  $("restart-no").addEventListener("click", () => ui.confirm.close(""));
  ui.confirm.addEventListener("close", () => {
    if (ui.confirm.returnValue === "new") newConversation(); else ui.restart.focus();
  });
  window.addEventListener("storage", (event) => {
    // Another tab of this browser started a new conversation: follow it.
    const token = event.key === TOKEN_KEY ? event.newValue || "" : "";
    if (/^[0-9a-f]{64}$/.test(token) && token !== state.token) startOver(token);
  });

  ui.form.addEventListener("submit", send);
  ui.input.addEventListener("input", () => { storeDraft(); fitInput(); });
  ui.input.addEventListener("keydown", (event) => {
    // Enter sends on a keyboard; on touch screens Enter is a new line and the button sends.
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing &&
        !matchMedia("(pointer: coarse)").matches) {
      event.preventDefault();
      ui.form.requestSubmit();
    }
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) { idleDelay.reset(); poll(); }
  });
  window.addEventListener("online", () => { errorDelay.reset(); poll(); });

  restoreDraft();
  poll();
})();
