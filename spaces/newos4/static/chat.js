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
  const {STATUS, createLog} = window.ChatMessages;  // how messages are shown: messages.js
  const DIALOG_HOST = {
    known: "The host will have to let the new conversation in before Hermes answers it, as " +
      "it did this one.",
    maybe: "If the host lets conversations in one by one, it will have to let the new one in " +
      "too.",
  };

  // Poll delays: often while an answer is on its way, backing off when idle or failing, and
  // when an answer is long overdue (the relay stopped, Hermes down, a question given up).
  const LONG_WAIT_MS = 120000;
  const awaitingDelay = backoff(1000, 3000, 1.25);
  const overdueDelay = backoff(3000, 10000, 1.5);
  const idleDelay = backoff(2000, 30000, 2);
  // Until the host lets the conversation in (or while an approval request waits, which the
  // host may decide), what comes next can come at any moment: the page looks as for a slow
  // answer, not as for an idle conversation.
  const hostDelay = backoff(2000, 10000, 1.5);
  const errorDelay = backoff(2000, 60000, 2);

  let ephemeral = false;
  const $ = (id) => document.getElementById(id);
  const ui = {
    scroll: $("scroll"), empty: $("empty"), log: $("log"), status: $("status"),
    alert: $("alert"), form: $("composer"), input: $("message"), thread: $("thread"),
    restart: $("restart"), confirm: $("confirm-restart"), confirmHost: $("confirm-host"),
  };
  const state = {
    token: loadToken(), cursor: 0, phase: "idle", overdue: false, skewMs: null,
    timer: null, polling: false, pollAgain: false, sending: false, alertSource: "",
  };
  const messages = createLog(ui.log, {serverNow, choose});

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
    if (state.skewMs === null) learnSkew(response.headers.get("Date"));
    return body;
  }

  function learnSkew(date) {
    // How far the server's clock is from this one, once per page view (from the first
    // answer's Date header, whole seconds): message epochs are the server's, and how long an
    // answer has been waited for must not depend on how well this device keeps time.
    const server = Date.parse(date || "");
    if (Number.isFinite(server)) state.skewMs = server + 500 - Date.now();
  }

  function serverNow() {
    return Date.now() + (state.skewMs || 0);
  }

  function inWords(seconds) {
    if (seconds < 60) return seconds + (seconds === 1 ? " second" : " seconds");
    const minutes = Math.ceil(seconds / 60);
    return minutes + (minutes === 1 ? " minute" : " minutes");
  }

  function waitedWords(ms) {
    // How long something has waited, whole units down (it has waited at least that long).
    const minutes = Math.floor(ms / 60000);
    const [n, unit] = minutes < 120 ? [minutes, "minute"]
      : minutes < 2880 ? [Math.floor(minutes / 60), "hour"] : [Math.floor(minutes / 1440), "day"];
    return n + " " + unit + (n === 1 ? "" : "s");
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

  // --- the conversation ---------------------------------------------------------------------

  function addMessage(message) {
    const stick = nearBottom();
    if (!messages.add(message)) return;
    ui.empty.hidden = true;
    if (stick || message.author === "operator") ui.scroll.scrollTop = ui.scroll.scrollHeight;
  }

  async function choose(group, word) {
    // A decision's button sends its word as the person's next message.
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

  function nearBottom() {
    return ui.scroll.scrollHeight - ui.scroll.scrollTop - ui.scroll.clientHeight < 80;
  }

  function showStatus() {
    // The status line says what the conversation waits for, from what poll.php returned.
    messages.settle();
    const [phase, since] = messages.phase();
    if (phase !== state.phase) {
      awaitingDelay.reset();
      overdueDelay.reset();
      hostDelay.reset();
      state.phase = phase;
    }
    const waited = phase === "working" ? serverNow() - since : 0;
    state.overdue = waited > LONG_WAIT_MS;
    say(ui.status, phase === "idle" ? ""
      : state.overdue ? STATUS.overdue.replace("{waited}", waitedWords(waited))
      : STATUS[phase]);
  }

  function say(region, text) {
    // A live region announces every change, even to the same words: touch it only to change it.
    if (region.textContent !== text) region.textContent = text;
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
    showStatus();
    if (stick) ui.scroll.scrollTop = ui.scroll.scrollHeight;
    state.cursor = Math.max(state.cursor, body.cursor);
    ui.thread.textContent = "Conversation " + body.thread +
      (ephemeral ? " (storage is blocked: a reload starts a new one)" : "");
    ui.log.setAttribute("aria-busy", "false");
    if (body.messages.length) {
      idleDelay.reset();
      hostDelay.reset();
    }
    errorDelay.reset();
    clearAlert("poll");
    switch (state.phase) {
      case "host": case "decide": return hostDelay.next();
      case "working": return state.overdue ? overdueDelay.next() : awaitingDelay.next();
      default: return idleDelay.next();
    }
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
      clearAlert();
      showStatus();
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
    messages.clear();
    ui.log.setAttribute("aria-busy", "true");
    ui.empty.hidden = false;
    ui.thread.textContent = "";
    clearAlert();
    showStatus();
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
    // A conversation the host had to let in (it was told so) tells the relay pairs: the new
    // one will have to be let in too. Otherwise the page cannot know, and says so.
    ui.confirmHost.textContent = messages.paired() ? DIALOG_HOST.known : DIALOG_HOST.maybe;
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
