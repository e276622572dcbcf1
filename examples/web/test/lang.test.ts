// The page's languages (src/lang/), without a browser: every key of English in every
// other language, nothing empty, each string with parameters taking the same ones as
// English and showing every one English shows; the language picked from the browser's
// list; how long, in words (src/words.ts); and invite codes read as the server reads
// them (src/code.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { en } from "../src/lang/en.js";
import { LANGUAGES, pickLanguage } from "../src/lang/index.js";
import { num } from "../src/lang/util.js";
import { normaliseCode } from "../src/code.js";
import { howLong } from "../src/words.js";

type Value = unknown;
const others = Object.entries(LANGUAGES).filter(([code]) => code !== "en");

/** A function's parameter names, from its source (the test bundle is not minified). */
function params(fn: Function): string[] {
  const source = fn.toString();
  const list = /^\(([^)]*)\)\s*=>/.exec(source)?.[1] ?? /^[^(]*\(([^)]*)\)/.exec(source)?.[1] ?? "";
  return list.split(",").map((p) => p.trim().split(/[\s:=]/)[0]).filter(Boolean);
}

// What each parameter is, by name: these are yes-or-no; `pips` is a list of pip names
// in fitsNoEnd (a number of pips elsewhere); the rest named here are text; any other
// is a number.
const FLAGS = new Set(["you", "spinner", "last", "fromSpinner", "mustDraw"]);
const TEXT = new Set([
  "url", "hi", "lo", "pip", "level", "name", "arm", "tile", "place", "who", "end", "names", "how", "winners", "partner",
  "seats", "spelled", "where", "server", "origin", "time", "bot",
]);

/**
 * Arguments for `fn` (English's parameter names), each number and text distinct, so
 * that what a call shows can be traced to the parameter; `flag` for every yes-or-no.
 */
function samples(key: string, names: string[], flag: boolean): Value[] {
  return names.map((p, i) => {
    if (FLAGS.has(p)) return flag;
    if (key === "fitsNoEnd" && p === "pips") return [`‹pip${i}a›`, `‹pip${i}b›`];
    if (TEXT.has(p)) return `‹${p}${i}›`;
    return 37 + i * 11; // a count that is no plural's edge in any of the languages
  });
}

/** The arguments a call shows, as the language writes them. */
function shown(lang: string, args: Value[], text: string): string[] {
  return args.flatMap((a) => {
    if (typeof a === "boolean") return [];
    const parts = Array.isArray(a) ? (a as string[]) : [typeof a === "number" ? num(lang, a) : String(a)];
    return parts.filter((p) => text.includes(p));
  });
}

/** Every leaf of a dictionary: its path and value. */
function leaves(value: Value, path: string): [string, Value][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => leaves(v, `${path}[${i}]`));
  if (value && typeof value === "object") return Object.entries(value).flatMap(([k, v]) => leaves(v, `${path}.${k}`));
  return [[path, value]];
}

test("every language has every key of English, none empty, each with English's parameters", () => {
  const english = leaves(en, "en");
  for (const [code, words] of others) {
    const theirs = new Map(leaves(words, "en"));
    assert.deepEqual([...theirs.keys()].sort(), english.map(([path]) => path).sort(), `${code}: the same keys as English`);
    for (const [path, mine] of english) {
      const their = theirs.get(path);
      assert.equal(typeof their, typeof mine, `${code} ${path}: a ${typeof mine} as in English`);
      if (typeof mine === "string") {
        assert.ok((their as string).trim().length > 0, `${code} ${path} is empty`);
      } else if (typeof mine === "function") {
        const key = path.replace(/^en\./, "");
        const names = params(mine as Function);
        assert.deepEqual(params(their as Function), names, `${code} ${key}: English's parameters`);
        for (const flag of [false, true]) {
          const args = samples(key, names, flag);
          const want = (mine as (...a: Value[]) => string)(...args);
          const got = (their as (...a: Value[]) => string)(...args);
          assert.ok(got.trim().length > 0, `${code} ${key}(${args.join(", ")}) is empty`);
          // Every parameter English shows, the language shows too (a number as it writes numbers).
          // (With `you`, `who` is "You": a language may say it with its own pronoun or
          // in the verb's person instead, as Romanian does: "tu începi", "ai câștigat".)
          const missing = shown("en", args, want)
            .filter((p) => !(flag && names.includes("you") && p.startsWith("‹who")))
            .map((p) => (/^[\d,]+$/.test(p) ? num(code, Number(p.replace(/,/g, ""))) : p))
            .filter((p) => !got.includes(p));
          assert.deepEqual(missing, [], `${code} ${key}: "${got}" leaves out what English shows ("${want}")`);
        }
      }
    }
    console.log(`  ${code}: ${english.length} strings (${english.filter(([, v]) => typeof v === "function").length} with parameters)`);
  }
});

// The strings a language writes as English does (the same word in both), by key; any
// other string equal to English's is one left untranslated.
const SAME_AS_ENGLISH: Record<string, string[]> = { nl: ["en.partner", "en.sheetHand"] };

test("no string is left in English, but for the words the language shares with it", () => {
  const english = new Map(leaves(en, "en"));
  for (const [code, words] of others) {
    const same = leaves(words, "en")
      .filter(([path, v]) => typeof v === "string" && v === english.get(path))
      .map(([path]) => path);
    assert.deepEqual(same, SAME_AS_ENGLISH[code] ?? [], `${code}: strings as in English`);
  }
});

test("plurals take the language's forms, numbers its digits' grouping", () => {
  const tiles = (code: keyof typeof LANGUAGES, n: number) => LANGUAGES[code].tiles(n);
  assert.deepEqual([1, 2, 5].map((n) => tiles("en", n)), ["1 tile", "2 tiles", "5 tiles"]);
  assert.deepEqual([1, 2, 5].map((n) => tiles("nl", n)), ["1 steen", "2 stenen", "5 stenen"]);
  // Romanian: one, few (2 to 19, and 101 to 119), other ("de" before 20 and more).
  assert.deepEqual([1, 2, 19, 20, 102].map((n) => tiles("ro", n)), ["o piesă", "2 piese", "19 piese", "20 de piese", "102 piese"]);
  // Serbian: one (1, 21), few (2 to 4, 22 to 24), other (5 to 20, 25 …).
  assert.deepEqual([1, 2, 5, 21, 22, 25].map((n) => tiles("sr", n)), ["1 плочица", "2 плочице", "5 плочица", "21 плочица", "22 плочице", "25 плочица"]);
  assert.deepEqual([1, 7].map((n) => tiles("th", n)), ["1 ตัว", "7 ตัว"]);
  // How long a player has been gone: Romanian's "de" from 20, Serbian's accusative.
  const seconds = (code: keyof typeof LANGUAGES, n: number) => LANGUAGES[code].duration.seconds(n);
  assert.deepEqual([1, 2, 20].map((n) => seconds("ro", n)), ["o secundă", "2 secunde", "20 de secunde"]);
  assert.deepEqual([1, 3, 5, 21].map((n) => seconds("sr", n)), ["1 секунду", "3 секунде", "5 секунди", "21 секунду"]);
  assert.equal(LANGUAGES.en.goneFor("Ana", LANGUAGES.en.duration.minutes(1)), "Ana has been gone for 1 minute.");
  assert.equal(LANGUAGES.en.sheetCaption(10000), "Score sheet, target 10,000");
  assert.equal(LANGUAGES.nl.sheetCaption(10000), "Scoreblad, doel 10.000");
});

test("how long is said in its largest whole unit, hours up to two days", () => {
  const said = [0, 59_999, 60_000, 3_599_999, 3_600_000, 48 * 3_600_000 - 1, 48 * 3_600_000].map(howLong);
  assert.deepEqual(said, ["0 seconds", "59 seconds", "1 minute", "59 minutes", "1 hour", "47 hours", "2 days"]);
});

test("the language is the one chosen, else the browser's first the page has, else English", () => {
  assert.equal(pickLanguage(null, ["nl-BE", "en-GB"]), "nl");
  assert.equal(pickLanguage(null, ["de-DE", "sr-Latn-RS", "th"]), "sr");
  assert.equal(pickLanguage(null, ["de", "TH-th"]), "th");
  assert.equal(pickLanguage(null, ["ro-MD"]), "ro");
  assert.equal(pickLanguage(null, ["de", "fr"]), "en");
  assert.equal(pickLanguage(null, []), "en");
  assert.equal(pickLanguage("ro", ["nl"]), "ro", "the switch's choice first");
  assert.equal(pickLanguage("xx", ["nl"]), "nl", "a choice the page does not have is ignored");
});

test("an invite code is read as the server reads it: any case, no hyphens or spaces, O as 0, I and L as 1", () => {
  assert.equal(normaliseCode("K7QM-4XPR-2D9F"), "K7QM4XPR2D9F");
  assert.equal(normaliseCode(" k7qm 4xpr–2d9f "), "K7QM4XPR2D9F"); // an en dash from a phone's keyboard
  assert.equal(normaliseCode("oooo-iiii-llll"), "000011111111");
  assert.equal(normaliseCode("k7qm4xpr2d9f"), "K7QM4XPR2D9F");
});
