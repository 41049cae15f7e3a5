// Run the admin UI shell's own script under Node against a served emulator, with a tiny DOM
// stand-in, and print what the page shows as JSON: node ui_shell.mjs <page url> <admin key>
// [namespace to click]. Its fetch calls go to the real server.
const [pageUrl, adminKey, clickNamespace] = process.argv.slice(2)
const html = await (await fetch(pageUrl)).text()
const script = html.match(/<script>([\s\S]*)<\/script>/)[1]

const element = () => ({
  value: "", textContent: "", className: "", children: [], onclick: null,
  replaceChildren(...children) { this.children = children; this.filled = true },
  append(child) { this.children.push(child) },
})
const elements = {}
const document = {
  getElementById: (id) => (elements[id] ??= element()),
  createElement: () => element(),
}
const stored = { adminKey }
const sessionStorage = {
  getItem: (name) => stored[name] ?? null,
  setItem: (name, value) => { stored[name] = String(value) },
}
const location = new URL(pageUrl)
const pageFetch = (path, options) => fetch(new URL(path, pageUrl), options)

const text = (node) => (typeof node === "string" ? node : node.textContent)
const $ = document.getElementById
const shown = () => ({
  title: $("title").textContent,
  status: $("status").textContent,
  namespace: $("ns").value,
  namespaces: $("namespaces").children.map((li) => text(li.children[0])),
  routes: $("routes").children.map((li) => text(li.children[0])),
  journal: $("journal").children.map((li) => text(li.children[0])),
})
// A load has finished when the journal list was filled or an error is shown.
const settle = async () => {
  for (let waited = 0; waited < 10_000; waited += 20) {
    if ($("journal").filled || $("status").textContent) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error("the page did not finish loading")
}

new Function("document", "location", "sessionStorage", "fetch", script)(
  document, location, sessionStorage, pageFetch)
await settle()
const first = shown()
let clicked = null
if (clickNamespace) {
  const li = $("namespaces").children.find((item) => text(item.children[0]) === clickNamespace)
  $("journal").filled = false
  li.children[0].onclick()
  await settle()
  clicked = shown()
}
console.log(JSON.stringify({ first, clicked }))
