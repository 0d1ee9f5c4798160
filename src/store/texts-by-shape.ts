/**
 * Statement texts kept by their shape (p-pgappend): a statement whose text depends only on its
 * shape (which parts it has, how many parameters each) gets its text made once a shape and the
 * same string sent again, so its prepared statement's name is hashed once too.
 */
export class TextsByShape<S> {
  private readonly texts = new Map<string, string>();
  private count = 0;

  /**
   * `keyOf` answers a shape's key, or undefined for a shape that cannot be told by one (its text
   * then made every time); `build` makes the text; at most `keep` texts are kept.
   */
  constructor(
    private readonly keep: number,
    private readonly keyOf: (shape: S) => string | undefined,
    private readonly build: (shape: S) => string,
  ) {}

  /** `shape`'s text: the kept one, else made (and kept when it has a key). */
  text(shape: S): string {
    const key = this.keyOf(shape);
    const kept = key === undefined ? undefined : this.texts.get(key);
    if (kept !== undefined) return kept;
    const text = this.build(shape);
    this.count++;
    if (key !== undefined) {
      if (this.texts.size >= this.keep) this.texts.clear();
      this.texts.set(key, text);
    }
    return text;
  }

  /** How many texts this process has made (not found by shape): for tests and benches. */
  get made(): number {
    return this.count;
  }
}
