// How the chat page shows a conversation's messages: Markdown rendered safely, one time format,
// and what the host's relay writes read for what it is (the pairing notice, the line saying the
// host let the conversation in, Hermes' approval requests and their decisions), with where the
// conversation stands as its messages tell it. chat.js talks to the server and uses this.
(function () {
  "use strict";

  // --- the relay's lines ---------------------------------------------------------------------
  // Only a `hermes` message is ever read so: a browser cannot post as hermes (post.php refuses
  // it), so the same words typed by the person or the in-page assistant are only words; and the
  // relay delivers no part of Hermes' own answers that begins like these (relay/answers.py), so
  // what a model is made to say is only words too. The layouts are the relay's
  // (spaces/newos4/relay/); a test holds them equal.

  const NOTICE_MARKER = "This conversation cannot reach Hermes yet.";  // relay/access.py
  const LET_IN_LINE = "The host let this conversation in: your message is on its way to Hermes.";
  const APPROVAL_MARKER = "Hermes asks before running a command:";     // relay/approvals.py
  const INVITATION = "\n\nReply with one of these words:";
  const CHOICE_LINE = /^- `(once|session|always|deny)`: /gm;
  const HOST_DECIDED = /^The host decided on this command: `(once|session|always|deny)`/;
  const ALIASES = {approve: "once", yes: "once", no: "deny"};
  // The notice of a pairing code says until when it is valid, in UTC, to the minute.
  const CODE_DEADLINE = /valid for one hour \(until (\d{2}):(\d{2}) UTC\)/;
  const CODE_TTL_MS = 3600000;

  const CHOICE_LABELS = {once: "Allow once", session: "Allow for this conversation",
    always: "Always allow", deny: "Deny"};

  // Every status the page can show (the chat manual lists them; a test holds the two equal).
  const STATUS = {
    decide: "Hermes is waiting for your decision.",
    host: "Waiting for the host to let this conversation in (see above).",
    expired: "The code above has expired: send a message to get a new one.",
    working: "Hermes is working on an answer…",
    overdue: "No answer yet after {waited}. Your message is saved and will be answered when " +
      "the host's relay passes it to Hermes; you can close this page and come back.",
  };

  function kindOf(message) {
    // "operator" or "agent" for the browser's messages; for Hermes': "notice", "letin",
    // "decided" (the relay's own lines), "request" (an approval request) or "answer".
    if (message.author !== "hermes") return message.author;
    const text = message.text;
    if (text.startsWith(APPROVAL_MARKER)) return "request";
    if (text.startsWith(NOTICE_MARKER)) return "notice";
    if (text === LET_IN_LINE) return "letin";
    if (HOST_DECIDED.test(text)) return "decided";
    return "answer";
  }

  function offeredChoices(text) {
    // The choices a request offers the person, as lines "- `word`: explanation".
    return Array.from(text.matchAll(CHOICE_LINE), (match) => match[1]);
  }

  function splitRequest(text) {
    // [what Hermes asks, the invitation to reply]: the invitation goes once it is answered.
    const at = text.indexOf(INVITATION);
    return at < 0 ? [text, ""] : [text.slice(0, at), text.slice(at + 2)];
  }

  function decisionOf(text, choices) {
    // The relay's rule: one offered word (or an alias), any case, blanks around ignored.
    let word = text.trim().toLowerCase();
    word = ALIASES[word] || word;
    return choices.includes(word) ? word : null;
  }

  function outcome(choices, after) {
    // What became of a request, from the messages after it up to the next request (each
    // {author, kind, text}), as the relay decides it: the host's decision wins; else the
    // first message that is not the in-page assistant's. null: it still waits.
    const host = after.find((m) => m.kind === "decided");
    if (host) return {by: "host", choice: HOST_DECIDED.exec(host.text)[1]};
    const reply = after.find((m) => m.author !== "agent");
    if (!reply) return null;
    if (reply.author !== "operator") return {by: "nobody"};
    const choice = decisionOf(reply.text, choices);
    return choice ? {by: "person", choice: choice} : {by: "other"};
  }

  function outcomeText(decided) {
    const label = CHOICE_LABELS[decided.choice];
    switch (decided.by) {
      case "host": return "The host decided: " + label + ".";
      case "person": return "You decided: " + label + ".";
      case "other": return "Refused: you replied with other words, which went to Hermes as " +
        "your next message.";
      default: return "Closed without a decision: Hermes went on without one.";
    }
  }

  function codeDeadline(message) {
    // {at: the minute the notice names (epoch ms), ends: when the code surely no longer
    // works}, or null for a notice without a code. The code was made in the pass that wrote
    // the notice, so it ends within an hour of it, within the minute named.
    const found = CODE_DEADLINE.exec(message.text);
    if (!found) return null;
    const day = new Date(message.epoch);
    let at = Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(),
                      Number(found[1]), Number(found[2]));
    if (at < message.epoch - CODE_TTL_MS) at += 86400000;  // past midnight UTC
    return {at: at, ends: Math.min(at + 60000, message.epoch + CODE_TTL_MS)};
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

  function render(target, text, plain) {
    if (plain || !markdown) {
      target.textContent = text;
      return;
    }
    try {
      const html = markdown.parse(text).trim();
      target.classList.add("markdown");
      target.replaceChildren(DOMPurify.sanitize(html, MARKUP));
    } catch (e) {
      target.textContent = text;  // whatever failed, the words are still shown
    }
  }

  // --- times -----------------------------------------------------------------------------
  // One format for every time on the page, in the reader's own time zone; a deadline also
  // names the zone (the relay writes it in UTC).

  const CLOCK = {hour: "2-digit", minute: "2-digit"};

  function formatTime(epoch, withZone) {
    const when = new Date(epoch);
    const now = new Date();
    const time = when.toLocaleTimeString([], withZone ? {...CLOCK, timeZoneName: "short"} : CLOCK);
    if (now.toDateString() === when.toDateString()) return time;
    const date = when.toLocaleDateString([], {day: "numeric", month: "short",
      year: now.getFullYear() === when.getFullYear() ? undefined : "numeric"});
    return date + ", " + time;
  }

  function timeElement(epoch, withZone) {
    const time = document.createElement("time");
    time.dateTime = new Date(epoch).toISOString();
    time.textContent = formatTime(epoch, withZone);
    time.title = new Date(epoch).toLocaleString([], {dateStyle: "full", timeStyle: "long"});
    return time;
  }

  function localizeDeadline(item, deadline) {
    // The notice's "08:12 UTC" becomes the same moment in the reader's time, zone named.
    const walker = document.createTreeWalker(item.querySelector(".text"), NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const found = /\b\d{2}:\d{2} UTC\b/.exec(node.data);
      if (!found) continue;
      const rest = node.splitText(found.index);
      rest.data = rest.data.slice(found[0].length);
      node.after(timeElement(deadline.at, true));
      return;
    }
  }


  // --- the log ---------------------------------------------------------------------------------

  const AUTHORS = {operator: "You", agent: "Assistant", hermes: "Hermes"};
  const HOST_KINDS = new Set(["notice", "letin", "decided"]);  // the relay's own words

  function createLog(log, {serverNow, choose}) {
    // The messages of one conversation in `log` (epoch order, each once). `serverNow()` is
    // the server's time as the page knows it; `choose(group, word)` sends a decision.
    const seen = new Set();

    function add(message) {
      // Show `message` in its place; the new element, or null when it is shown already.
      if (seen.has(message.id)) return null;
      seen.add(message.id);
      const item = element(message);
      let after = log.lastElementChild;  // keep the log in epoch order whatever arrives first
      while (after && Number(after.dataset.epoch) > message.epoch) {
        after = after.previousElementSibling;
      }
      if (after) after.after(item); else log.prepend(item);
      return item;
    }

    function clear() {
      seen.clear();
      log.replaceChildren();
    }

    function pendingRequest() {
      // The request still waiting for the person: the latest message, or followed only by
      // the in-page AI's messages, which never decide (the relay leaves the request waiting).
      let item = log.lastElementChild;
      while (item && item.dataset.author === "agent") item = item.previousElementSibling;
      return item && item.kind === "request" && item.choices.length ? item : null;
    }

    function settle() {
      // Each request shows what became of it, and stops inviting a reply once answered; each
      // notice shows when its code was used (or is no more). Only the pending request keeps
      // buttons: a late click would be read as a new message.
      const pending = pendingRequest();
      for (const item of log.children) {
        if (item.kind === "request") settleRequest(item, item === pending);
        if (item.kind === "notice") settleNotice(item, serverNow());
      }
      offerChoices(pending);
    }

    function phase() {
      // Where the conversation stands, from its messages alone: [phase, since (epoch ms)].
      if (pendingRequest()) return ["decide", 0];
      let item = log.lastElementChild;
      const last = item;
      while (item && item.dataset.author !== "hermes") item = item.previousElementSibling;
      if (item && item.kind === "notice") {
        // Nothing written since reached Hermes: no answer comes until the host lets it in.
        return [item === last && item.classList.contains("expired") ? "expired" : "host", 0];
      }
      // A question of the person's (or a decision), or the relay saying it is on its way.
      const onItsWay = last && (last.dataset.author !== "hermes" || last.kind === "letin" ||
                                last.kind === "decided");
      return onItsWay ? ["working", Number(last.dataset.epoch)] : ["idle", 0];
    }

    function paired() {
      // True when this conversation was told to wait for the host: the relay pairs.
      return Array.from(log.children).some((item) => item.kind === "notice");
    }

    function offerChoices(pending) {
      log.querySelectorAll(".choices").forEach((group) => {
        if (group.parentElement !== pending) group.remove();
      });
      if (!pending || pending.querySelector(".choices")) return;
      const group = document.createElement("div");
      group.className = "choices";
      group.setAttribute("role", "group");
      group.setAttribute("aria-label", "Your decision");
      for (const word of pending.choices) {
        const button = document.createElement("button");
        button.type = "button";
        button.className = "choice";
        button.dataset.choice = word;
        button.textContent = CHOICE_LABELS[word];
        button.addEventListener("click", () => choose(group, word));
        group.append(button);
      }
      pending.append(group);
    }

    return {add, clear, settle, phase, paired};
  }

  function element(message) {
    const kind = kindOf(message);
    const item = document.createElement("article");
    item.className = "msg";
    item.dataset.author = message.author;
    item.dataset.kind = kind;
    item.dataset.epoch = String(message.epoch);
    item.dataset.id = message.id;
    item.kind = kind;
    item.message = message;
    const meta = document.createElement("p");
    meta.className = "who";
    // The notice says Hermes cannot be reached yet: it is the host's word, signed so.
    meta.append(HOST_KINDS.has(kind) ? "Host" : AUTHORS[message.author] || message.author,
                " · ", timeElement(message.epoch, false));
    const text = document.createElement("div");
    text.className = "text";
    item.append(meta, text);
    if (kind === "request") {
      const [ask, invite] = splitRequest(message.text);
      render(text, ask, false);
      const rest = document.createElement("div");
      rest.className = "invite text";
      render(rest, invite, false);
      item.append(rest);
      item.classList.add("approval");
      item.choices = offeredChoices(message.text);
    } else {
      render(text, message.text, message.author === "operator");
    }
    if (HOST_KINDS.has(kind)) item.classList.add("host");
    if (kind === "notice") {
      item.classList.add("notice");
      item.deadline = codeDeadline(message);
      if (item.deadline) localizeDeadline(item, item.deadline);
    }
    return item;
  }

  function itemsAfter(item) {
    // The messages after `item` up to the next approval request, as outcome() reads them.
    const after = [];
    for (let next = item.nextElementSibling; next && next.kind !== "request";
         next = next.nextElementSibling) {
      after.push({author: next.dataset.author, kind: next.kind, text: next.message.text});
    }
    return after;
  }

  function settleRequest(item, pending) {
    const decided = pending ? null : outcome(item.choices, itemsAfter(item));
    item.classList.toggle("decided", Boolean(decided));
    item.dataset.decidedBy = decided ? decided.by : "";
    item.querySelector(".invite").hidden = Boolean(decided);
    stamp(item, decided ? outcomeText(decided) : "");
  }

  function settleNotice(item, now) {
    const after = itemsAfter(item);
    const next = after.findIndex((m) => m.kind === "notice");
    const letIn = (next < 0 ? after : after.slice(0, next)).some((m) => m.kind === "letin");
    const expired = !letIn && Boolean(item.deadline) && now >= item.deadline.ends;
    item.classList.toggle("used", letIn);
    item.classList.toggle("expired", expired);
    stamp(item, letIn ? (item.deadline ? "Code used: the host let this conversation in."
      : "The host let this conversation in.") : expired ? "This code has expired." : "");
  }

  function stamp(item, text) {
    // A line on a card saying what became of it (in words, not only in colour).
    let line = item.querySelector(".stamp");
    if (!text) {
      if (line) line.remove();
      return;
    }
    if (!line) {
      line = document.createElement("p");
      line.className = "stamp";
      item.querySelector(".who").after(line);
    }
    if (line.textContent !== text) line.textContent = text;
  }

  window.ChatMessages = {STATUS, createLog};
})();
