import { describe, expect, it } from 'vitest';
import {
  argSecrets,
  createRedactor,
  maskSecretArgs,
  maskUrlSecrets,
  redactCredentialShapes,
  urlSecrets,
} from './redact';

describe('maskUrlSecrets', () => {
  it('masks the password and the credential query values of a URL', () => {
    expect(maskUrlSecrets('https://user:pw-in-url-555@example.com/mcp?token=query-secret-666&mode=x')).toBe(
      'https://user:[REDACTED]@example.com/mcp?token=[REDACTED]…-666&mode=x',
    );
  });

  it('masks signature, key and auth parameters and leaves the others', () => {
    expect(
      maskUrlSecrets(
        'see https://b.example/c?X-Amz-Signature=abcdef0123456789&key=k1&monkey=banana&auth=x#token=frag',
      ),
    ).toBe(
      'see https://b.example/c?X-Amz-Signature=[REDACTED]…6789&key=[REDACTED]&monkey=banana&auth=[REDACTED]#token=frag',
    );
  });

  it('leaves a URL with no credential as it is', () => {
    for (const text of [
      'http://127.0.0.1:11434/v1',
      'ollama=http://127.0.0.1:11434/v1',
      'postgres://u@h:5432/db',
      'https://h/p?token=',
      'not a url',
    ])
      expect(maskUrlSecrets(text)).toBe(text);
  });

  it('gives the secrets, also percent-decoded, for the redactor', () => {
    expect(urlSecrets('https://u:p%40ss-word@h/?api_key=abc&sig=zz')).toEqual([
      'p%40ss-word',
      'p@ss-word',
      'abc',
      'abc',
      'zz',
      'zz',
    ]);
  });
});

describe('maskSecretArgs', () => {
  const args = [
    'server.js',
    '--api-key',
    'arg-secret-7171',
    '--token=arg-tok-7272',
    '--verbose',
    '--github-token',
    'ghp-short',
    '--key-file',
    'k.pem',
    '-p',
    '8080',
    '--password',
    '--other',
  ];

  it('masks the value after a credential flag and in --flag=value', () => {
    expect(maskSecretArgs(args)).toEqual([
      'server.js',
      '--api-key',
      '[REDACTED]…7171',
      '--token=[REDACTED]…7272',
      '--verbose',
      '--github-token',
      '[REDACTED]',
      '--key-file',
      'k.pem',
      '-p',
      '8080',
      '--password',
      '--other',
    ]);
  });

  it('gives the values for the redactor', () => {
    expect(argSecrets(args)).toEqual(['arg-secret-7171', 'arg-tok-7272', 'ghp-short']);
  });
});

describe('redactCredentialShapes: credentials given by their context', () => {
  const redactor = { string: redactCredentialShapes };

  it('redacts credential header values, secret-named assignments and URL passwords, keeping the names', () => {
    expect(
      redactor.string(
        "curl -H 'Authorization: Basic dXNlcjpwYXNzU0VDUkVU' -H 'X-Api-Key: hdrARGSECRET777' -u x",
      ),
    ).toBe("curl -H 'Authorization: Basic [REDACTED]' -H 'X-Api-Key: [REDACTED]' -u x");
    expect(
      redactor.string('{"Private-Token": "glpat-abc123def456", "authorization": "Token abc123def456"}'),
    ).toBe('{"Private-Token": "[REDACTED]", "authorization": "Token [REDACTED]"}');
    expect(
      redactor.string(
        'db_password = FILEPASSWORD_SECRET\nexport AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n' +
          '  "token": "abc123def456",\nurl=postgres://admin:PGFILEPW_secret@db/x',
      ),
    ).toBe(
      'db_password = [REDACTED]\nexport AWS_SECRET_ACCESS_KEY=[REDACTED]\n' +
        '  "token": "[REDACTED]",\nurl=postgres://admin:[REDACTED]@db/x',
    );
    expect(redactor.string('{"user":"bob","password":"hunter2pass"}')).toBe(
      '{"user":"bob","password":"[REDACTED]"}',
    );
  });

  it('leaves code, words, references and what is already redacted as they are', () => {
    for (const text of [
      '  password: string;\n  this.password = password;\n  password: hashedPassword,',
      'password = getpass.getpass()\npassword = os.environ["PW"]\npassword = config.db.password',
      'password = ${DB_PASS}\napi_key = $API_KEY\n-H "X-Api-Key: $API_KEY"',
      'input_tokens: 1234\nmax_tokens = 4096\nsecret: true\nkey = abcdef123',
      'Authorization: required for every route; api-key: optional',
      'const apiKey = process.env.API_KEY;',
      'postgres://u@h:5432/db https://u:${PW}@h/ git@github.com:o/r.git see https://user:password@example.com',
      'Authorization: Bearer [REDACTED]\nurl = http://u:[REDACTED]@h/',
    ])
      expect(redactor.string(text)).toBe(text);
  });

  it('is not part of the redactor every tool answer passes: the model reads files as they are', () => {
    const file = 'db_password = FILEPASSWORD_SECRET\nurl=postgres://admin:PGFILEPW_secret@db/x';
    expect(createRedactor().string(file)).toBe(file);
    expect(createRedactor(['FILEPASSWORD_SECRET']).string(file)).toBe(
      'db_password = [REDACTED]\nurl=postgres://admin:PGFILEPW_secret@db/x',
    );
  });
});

describe('redactor.value and errors', () => {
  it('an Error anywhere in a value keeps its name, message, code and cause, secrets redacted', () => {
    const redactor = createRedactor(['sk-live-secret-123456']);
    const inner = Object.assign(new Error('socket hang up with sk-live-secret-123456'), {
      code: 'ECONNRESET',
    });
    const outer = new TypeError('fetch failed', { cause: inner });
    const out = redactor.value({ details: { errors: [outer] } });
    expect(out).toEqual({
      details: {
        errors: [
          {
            name: 'TypeError',
            message: 'fetch failed',
            cause: { name: 'Error', message: 'socket hang up with [REDACTED]', code: 'ECONNRESET' },
          },
        ],
      },
    });
  });

  it('a cause that loops is cut, not followed forever', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(JSON.stringify(createRedactor().value({ a }))).toContain('[circular]');
  });
});
