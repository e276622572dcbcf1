// The page's languages: English and the four the rules were published in. The page
// speaks the one kept in localStorage (the header's switch), else the first of the
// browser's languages (navigator.languages) it has, else English. `T` is the current
// language's dictionary; every module reads it when it draws, so a switch takes
// effect at the next render.
import { en, type Words } from "./en.js";
import { nl } from "./nl.js";
import { ro } from "./ro.js";
import { sr } from "./sr.js";
import { th } from "./th.js";

export const LANGUAGES = { en, ro, nl, sr, th } satisfies Record<string, Words>;
export type Lang = keyof typeof LANGUAGES;
export const isLang = (code: string): code is Lang => Object.hasOwn(LANGUAGES, code);

export let lang: Lang = "en";
export let T: Words = en;

export function setLanguage(code: Lang) {
  lang = code;
  T = LANGUAGES[code];
}

/**
 * The language to speak: the one chosen before (`saved`), else the first of the
 * browser's preferred languages the page has, by its primary subtag ("nl-BE" is
 * Dutch; "sr-Latn" Serbian, written in Cyrillic here), else English.
 */
export function pickLanguage(saved: string | null, preferred: readonly string[]): Lang {
  if (saved && isLang(saved)) return saved;
  for (const tag of preferred) {
    const primary = tag.toLowerCase().split("-")[0];
    if (isLang(primary)) return primary;
  }
  return "en";
}

/** Every language's words are written left to right. */
export const dir = (_code: Lang): "ltr" | "rtl" => "ltr";

/** The keys of the words that are plain strings (the page's static text). */
export type TextKey = { [K in keyof Words]: Words[K] extends string ? K : never }[keyof Words];
