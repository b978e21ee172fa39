/** The demo page (issue 34 §2): catalogue, picks, one private report, on-device ranking. */
import { recommend } from "../src/device.js";
import type { DpPopPlaintext } from "../src/systems/dp_pop.js";
import {
  type DemoConfig, type Film, type Seat, type Terms, fetchTerms, joinRound, ledgerState,
  releasedCounts,
} from "./sdk.js";

const MATCHES = 25;
const RECOMMENDED = 10;
const SEAT_KEY = "dprec-demo-seat";
const PICKS_KEY = "dprec-demo-picks";
/** The test flag: a page opened with `?test-hook=plaintext` (tests/clients/test_demo_browser.py
 * only; no link on the page sets it) keeps its last report's plaintext, v and y = v + z, on
 * `window.dprecTestPlaintext`, where the test reads it to check the released sum exactly.
 * It is this device's own data and stays in this page: the SDK sends only the sealed shares,
 * and nothing of the plaintext is kept without the flag. */
const TEST_HOOK = new URLSearchParams(location.search).get("test-hook") === "plaintext";

function keepForTest(p: DpPopPlaintext): void {
  (window as unknown as { dprecTestPlaintext: unknown }).dprecTestPlaintext =
    { v: Array.from(p.v), y: Array.from(p.y) };
}

function el<T extends HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (e === null) throw new Error(`the page lacks #${id}`);
  return e as T;
}

function say(id: string, text: string, error = false): void {
  const e = el(id);
  e.textContent = text;
  e.classList.toggle("error", error);
}

/** An epsilon as people read it (no float residue: 2, not 1.9999999999999998). */
function eps(x: number): string {
  return String(Number(x.toPrecision(6)));
}

function label(f: Film): string {
  return f.year === null ? f.title : `${f.title} (${f.year})`;
}

class Page {
  picked = new Set<number>();
  terms: Terms | null = null;

  constructor(readonly cfg: DemoConfig) {
    const stored = localStorage.getItem(PICKS_KEY);
    if (stored !== null) {
      for (const id of JSON.parse(stored) as number[]) if (cfg.items[id] !== undefined) this.picked.add(id);
    }
  }

  showMatches(query: string): void {
    const q = query.trim().toLowerCase();
    const list = el<HTMLUListElement>("matches");
    list.replaceChildren();
    const found = this.cfg.items.filter((f) => q === "" || f.title.toLowerCase().includes(q)).slice(0, MATCHES);
    for (const f of found) {
      const li = document.createElement("li");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.id = `film-${f.id}`;
      box.checked = this.picked.has(f.id);
      box.addEventListener("change", () => this.toggle(f.id, box.checked));
      const lab = document.createElement("label");
      lab.htmlFor = box.id;
      lab.textContent = label(f);
      const wrap = document.createElement("span");
      wrap.append(box, " ", lab);
      li.append(wrap);
      list.append(li);
    }
  }

  toggle(id: number, on: boolean): void {
    if (on) this.picked.add(id); else this.picked.delete(id);
    localStorage.setItem(PICKS_KEY, JSON.stringify([...this.picked]));
    const box = document.getElementById(`film-${id}`) as HTMLInputElement | null;
    if (box !== null) box.checked = on;
    this.showPicked();
  }

  showPicked(): void {
    const list = el<HTMLUListElement>("picked");
    list.replaceChildren();
    for (const id of [...this.picked].sort((a, b) => a - b)) {
      const f = this.cfg.items[id]!;
      const li = document.createElement("li");
      li.append(label(f));
      const rm = document.createElement("button");
      rm.type = "button";
      rm.className = "small";
      rm.textContent = "Remove";
      rm.setAttribute("aria-label", `Remove ${label(f)}`);
      rm.addEventListener("click", () => this.toggle(id, false));
      li.append(rm);
      list.append(li);
    }
    say("picked-count", String(this.picked.size));
    el<HTMLButtonElement>("join").disabled = this.picked.size === 0;
  }

  showTerms(t: Terms): void {
    this.terms = t;
    say("terms", `This round counts how many people like each of ${t.nItems.toLocaleString("en")} films. ` +
      `Your device sends at most ${t.k} of your films, with noise, at a privacy cost of ε = ${t.epsilon} ` +
      `(δ = ${t.delta}). ` + (t.minHonest === null
      ? "This server describes no secure sum: your device's policy decides whether to take part."
      : `The count is released only once ${t.minHonest} devices have reported.`));
    say("trust-min-honest", t.minHonest === null ? "min_honest (not stated)" : String(t.minHonest));
    say("trust-k", String(t.k));
    this.showPicked();
  }

  async seat(): Promise<Seat> {
    const stored = localStorage.getItem(SEAT_KEY);
    if (stored !== null) return JSON.parse(stored) as Seat;
    const r = await fetch("/enrol", { method: "POST" });
    if (!r.ok) throw new Error(`enrolment refused (${r.status}): ${(await r.json() as { detail: string }).detail}`);
    const seat = (await r.json()) as Seat;
    localStorage.setItem(SEAT_KEY, JSON.stringify(seat));
    return seat;
  }

  async join(): Promise<void> {
    const button = el<HTMLButtonElement>("join");
    button.disabled = true;
    say("status", "Building your report: sampling, noise, proof, sealing…");
    try {
      const seat = await this.seat();
      const out = await joinRound(this.cfg, seat, [...this.picked], TEST_HOOK ? keepForTest : undefined);
      if (out.status !== "sent" && out.status !== "resent") {
        say("status", out.status === "budget" ? "Not sent: your privacy budget is spent."
          : `Not sent (${out.status}): no round is open for you now.`, true);
        return;
      }
      say("status", out.status === "sent" ? "Your report was accepted by the proxy."
        : "Your report was accepted by the proxy (the stored report, sent again bit for bit).");
      // tells the demo's operator a report arrived (the proxy publishes no count)
      await fetch("/reported", { method: "POST", body: JSON.stringify({ client_id: seat.client_id }) });
      say("left-what", "One sealed report to the proxy: two encrypted halves (one for the server, one for " +
        "the proxy) and the proof. Not your list of films.");
      say("left-bytes", `${out.bytes.toLocaleString("en")} bytes`);
      say("left-epsilon", `ε = ${eps(out.epsilon)}`);
      say("left-budget", `ε = ${eps(out.budget - out.spent)} of ${eps(out.budget)} left`);
    } catch (e) {
      say("status", `Not sent: ${(e as Error).message}`, true);
      await this.showLedger();
    } finally {
      this.showPicked();
    }
  }

  async recommend(): Promise<void> {
    say("recs-status", "Reading the released counts…");
    try {
      const released = await releasedCounts(this.cfg);
      if (released === null) {
        say("recs-status", "No round has been released yet: it needs enough reports. Try again soon.");
        return;
      }
      // the SDK's on-device ranking: own films left out, ties by the smaller item id
      const ranked = recommend(released.counts, { items: [...this.picked] }, RECOMMENDED);
      const list = el<HTMLOListElement>("recs");
      list.replaceChildren(...ranked.map((id) => {
        const li = document.createElement("li");
        li.textContent = label(this.cfg.items[id]!);
        li.dataset["item"] = String(id);
        return li;
      }));
      say("recs-status", `Ranked on this device from the counts of ${released.contributors} devices; ` +
        "your own films are left out.");
    } catch (e) {
      say("recs-status", `No recommendations: ${(e as Error).message}`, true);
    }
  }

  async showLedger(): Promise<void> {
    const stored = localStorage.getItem(SEAT_KEY);
    if (stored === null) return;
    const state = await ledgerState(JSON.parse(stored) as Seat);
    say("left-budget", `ε = ${eps(state.budget - state.spent)} of ${eps(state.budget)} left`);
  }
}

async function main(): Promise<void> {
  const r = await fetch("/config.json");
  const page = new Page((await r.json()) as DemoConfig);
  const search = el<HTMLInputElement>("search");
  search.addEventListener("input", () => page.showMatches(search.value));
  el("join").addEventListener("click", () => void page.join());
  el("recommend").addEventListener("click", () => void page.recommend());
  page.showMatches("");
  page.showPicked();
  await page.showLedger();
  try {
    page.showTerms(await fetchTerms(page.cfg));
  } catch (e) {
    say("terms", `Cannot read the round's terms: ${(e as Error).message}`, true);
  }
  document.body.dataset["ready"] = "1";
}

void main();
