/**
 * Every grammar highlight.js ships (one file each under `highlight.js/lib/languages/`) with its
 * aliases, so a code block's language can be loaded by name or alias on first use without loading
 * all 192 grammars to learn their aliases. Generated from highlight.js 11.11 (where two grammars
 * claim an alias, the one highlight.js registers last, as it does); `highlight.test.ts` checks the
 * table against the installed highlight.js.
 * @module
 */

// `name:alias,alias` entries, space separated.
const TABLE =
  '1c abnf accesslog actionscript:as ada angelscript:asc apache:apacheconf applescript:osascript ' +
  'arcade arduino:ino armasm:arm asciidoc:adoc aspectj autohotkey:ahk autoit avrasm awk axapta:x++ ' +
  'bash:sh,zsh basic bnf brainfuck:bf c:h cal capnproto:capnp ceylon clean:dcl,icl clojure:clj,edn ' +
  'clojure-repl cmake:cmake.in coffeescript:coffee,cson,iced coq cos:cls ' +
  'cpp:c++,cc,cxx,h++,hh,hpp,hxx crmsh:crm,pcmk crystal:cr csharp:c#,cs csp css d dart ' +
  'delphi:dfm,dpr,pas,pascal diff:patch django:jinja dns:bind,zone dockerfile:docker dos:bat,cmd ' +
  'dsconfig dts dust:dst ebnf elixir:ex,exs elm erb erlang:erl erlang-repl excel:xls,xlsx fix flix ' +
  'fortran:f90,f95 fsharp:f#,fs gams:gms gauss:gss gcode:nc gherkin:feature glsl gml go:golang golo ' +
  'gradle graphql:gql groovy haml handlebars:hbs,html.handlebars,html.hbs,htmlbars haskell:hs ' +
  'haxe:hx hsp http:https hy:hylang inform7:i7 ini:toml irpf90 isbl java:jsp ' +
  'javascript:cjs,js,jsx,mjs jboss-cli:wildfly-cli json:json5,jsonc julia julia-repl:jldoctest ' +
  'kotlin:kt,kts lasso:lassoscript latex:tex ldif leaf less lisp livecodeserver livescript:ls llvm ' +
  'lsl lua:pluto makefile:mak,make,mk markdown:md,mkd,mkdown mathematica:mma,wl matlab maxima mel ' +
  'mercury:m,moo mipsasm:mips mizar mojolicious monkey moonscript:moon n1ql nestedtext:nt ' +
  'nginx:nginxconf nim nix:nixos node-repl nsis objectivec:mm,obj-c,obj-c++,objc,objective-c++ ' +
  'ocaml openscad:scad oxygene parser3 perl:pl,pm pf:pf.conf pgsql:postgres,postgresql php ' +
  'php-template plaintext:text,txt pony powershell:ps,ps1,pwsh processing:pde profile prolog ' +
  'properties protobuf:proto puppet:pp purebasic:pb,pbi python:gyp,ipython,py python-repl:pycon ' +
  'q:k,kdb qml:qt r reasonml:re rib roboconf:graph,instances routeros:mikrotik rsl ' +
  'ruby:gemspec,irb,podspec,rb,thor ruleslanguage rust:rs sas scala scheme:scm scilab:sci scss ' +
  'shell:console,shellsession smali smalltalk:st sml:ml sqf sql stan:stanfuncs stata:ado,do ' +
  'step21:p21,step,stp stylus:styl subunit swift taggerscript tap tcl:tk thrift tp twig:craftcms ' +
  'typescript:cts,mts,ts,tsx vala vbnet:vb vbscript:vbs vbscript-html verilog:sv,svh,v vhdl vim ' +
  'wasm wren x86asm xl:tao xml:atom,html,plist,rss,svg,wsf,xhtml,xjb,xsd,xsl xquery:xpath,xq,xqm ' +
  'yaml:yml zephir:zep ';

let files: Map<string, string> | undefined;

/** The grammar file for a language name or alias (any case), or undefined when there is none. */
export function grammarFile(nameOrAlias: string): string | undefined {
  if (!files) {
    files = new Map();
    for (const entry of TABLE.trim().split(' ')) {
      const [name, aliases] = entry.split(':');
      files.set(name, name);
      for (const alias of aliases ? aliases.split(',') : []) files.set(alias, name);
    }
  }
  return files.get(nameOrAlias.toLowerCase());
}
