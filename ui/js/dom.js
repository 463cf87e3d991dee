// Building the page from data without ever parsing data as markup: every text goes in as a text
// node, every attribute through setAttribute. Payloads, response bodies and names are tenant data.

const SVG_NS = 'http://www.w3.org/2000/svg';

function fill(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
    else if (name === 'style' || name.startsWith('on')) throw new Error(`attribute ${name} is not set this way`);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

/** Appends children: nodes as they are, strings and numbers as text, arrays flattened, null skipped. */
export function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

/** An HTML element: `h('td', { class: 'num' }, text)`; `on<event>` attributes take listeners. */
export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element, the same way. */
export function s(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** Replaces a node's children. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}
