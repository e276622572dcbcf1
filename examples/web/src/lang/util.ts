// Helpers for the dictionaries: numbers in the language's locale, plurals by its
// plural rules (English and Dutch have two forms; Romanian and Serbian three; Thai
// one), lists joined as the language joins them.

const rules = new Map<string, Intl.PluralRules>();
const numbers = new Map<string, Intl.NumberFormat>();

/** A number as the language writes it ("10,000", "10.000"). */
export function num(lang: string, n: number): string {
  let f = numbers.get(lang);
  if (!f) numbers.set(lang, (f = new Intl.NumberFormat(lang)));
  return f.format(n);
}

/** The forms of a word for a count, by Intl.PluralRules' categories: "#" is the count. */
export type Forms = Partial<Record<Intl.LDMLPluralRule, string>> & { other: string };

/** The form for `n` ("1 tile", "2 tiles"; "1 piesă", "2 piese", "20 de piese"), "#" replaced by the number. */
export function plural(lang: string, n: number, forms: Forms): string {
  let r = rules.get(lang);
  if (!r) rules.set(lang, (r = new Intl.PluralRules(lang)));
  return (forms[r.select(n)] ?? forms.other).replace("#", num(lang, n));
}

/** "four and two", "four, two and three" (as the language joins a list). */
export function list(lang: string, items: string[]): string {
  return new Intl.ListFormat(lang, { type: "conjunction" }).format(items);
}
