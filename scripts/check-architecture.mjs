#!/usr/bin/env node
/**
 * The size and placement rules of docs/architecture.md that dependency-cruiser cannot see:
 * - no source file over 500 lines, no function over 150 lines (src/, tests excluded);
 * - no SQL outside a repository file (`*-repository.ts`, `*queries.ts`, `*store.ts`) or src/store/;
 * - no `as unknown as` in src/app.ts (createApp wires without placeholders or casts);
 * - no recursive `mkdir`/`mkdirSync` (it spins forever under /proc): src/util/make-dirs.ts.
 * Prints every violation and exits 1 when there is one. Run: npm run check:arch
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const ROOT = new URL('..', import.meta.url).pathname;
const MAX_FILE_LINES = 500;
const MAX_FUNCTION_LINES = 150;
const REPOSITORY_FILE = /(-repository|queries|-store|\/store)\.ts$/;
const SQL =
  /\b(SELECT\b[\s\S]*\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX|VIRTUAL TABLE)|PRAGMA\s+\w+)\b/;

function sourceFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name === 'web' && dir.endsWith('surfaces')) continue; // browser sources: own tsconfig and checks
      out.push(...sourceFiles(path));
    } else if (/\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name) && !name.endsWith('.d.ts')) {
      out.push(path);
    }
  }
  return out;
}

const problems = [];
for (const path of sourceFiles(join(ROOT, 'src'))) {
  const file = relative(ROOT, path);
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n').length;
  if (lines > MAX_FILE_LINES) problems.push(`${file}: ${lines} lines (max ${MAX_FILE_LINES})`);
  const source = ts.createSourceFile(
    file,
    text,
    ts.ScriptTarget.Latest,
    true,
    file.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const lineOf = (pos) => source.getLineAndCharacterOfPosition(pos).line + 1;
  const sqlAllowed = REPOSITORY_FILE.test(file) || file.startsWith('src/store/');
  const visit = (node) => {
    if (
      ts.isFunctionDeclaration(node) ||
      ts.isFunctionExpression(node) ||
      ts.isArrowFunction(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isGetAccessor(node) ||
      ts.isSetAccessor(node)
    ) {
      const length = lineOf(node.getEnd()) - lineOf(node.getStart()) + 1;
      if (length > MAX_FUNCTION_LINES) {
        const name = node.name?.getText(source) ?? functionName(node);
        problems.push(
          `${file}:${lineOf(node.getStart())}: function ${name} is ${length} lines (max ${MAX_FUNCTION_LINES})`,
        );
      }
    }
    if (
      !sqlAllowed &&
      (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node))
    ) {
      const literal = node.getText(source);
      if (SQL.test(literal))
        problems.push(`${file}:${lineOf(node.getStart())}: SQL outside a repository file`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  // Node's recursive mkdir never returns under /proc (src/util/make-dirs.ts): makeDirs instead.
  if (file !== 'src/util/make-dirs.ts' && /\bmkdir(Sync)?\([^;]*recursive:\s*true/.test(text)) {
    problems.push(
      `${file}: a recursive mkdir (it spins forever under /proc): use makeDirs (src/util/make-dirs.ts)`,
    );
  }
  if (file === 'src/app.ts' && text.includes('as unknown as')) {
    problems.push('src/app.ts: `as unknown as` (createApp wires without placeholders or casts)');
  }
}

function functionName(node) {
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText();
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText();
  return '(anonymous)';
}

if (problems.length) {
  for (const problem of problems) console.error(problem);
  console.error(`\n${problems.length} architecture problem(s); see docs/architecture.md`);
  process.exit(1);
}
console.log(
  'architecture: file and function sizes, SQL placement, app.ts wiring and directory creation are within the rules',
);
