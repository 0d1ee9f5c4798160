import { describe, expect, it } from 'vitest';
import { SvcError } from '../../errors';
import { redactStoreUrl, storeTarget } from '../store-url';
import { storeError } from './errors';

const url = 'postgres://svc:p4ssw0rd-x@db.example:6543/svc_prod';
const context = { target: storeTarget(url), redactedUrl: redactStoreUrl(url), url };
const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('PostgreSQL errors', () => {
  it('STORE-PG-15: each failure names host, port and database, the next step, and never the password', () => {
    const cases: [Error, SvcError['code'], RegExp][] = [
      [
        pgError('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:6543'),
        'unavailable',
        /connection refused; start the server/,
      ],
      [
        pgError('ENOTFOUND', 'getaddrinfo ENOTFOUND db.example'),
        'unavailable',
        /host "db.example" not found/,
      ],
      [new Error('timeout expired'), 'unavailable', /timed out connecting/],
      [
        pgError('23505', 'duplicate key value violates unique constraint "workspace_leases_pkey"'),
        'conflict',
        /duplicate key value/,
      ],
      [new Error('Connection terminated due to connection timeout'), 'unavailable', /timed out connecting/],
      [
        new Error('Connection terminated unexpectedly'),
        'unavailable',
        /cannot reach PostgreSQL at .*: the connection was closed before PostgreSQL answered \(no PostgreSQL server at that address, or a firewall or proxy closed it\); start the server/,
      ],
      [
        new Error('timeout exceeded when trying to connect'),
        'unavailable',
        /every pooled connection stayed busy/,
      ],
      [
        pgError('28P01', 'password authentication failed for user "svc" (p4ssw0rd-x)'),
        'unauthorized',
        /refused the login: password authentication failed for user "svc" \(\*\*\*\); check the user and password/,
      ],
      [
        pgError('3D000', 'database "svc_prod" does not exist'),
        'config_error',
        /does not exist; create it \(createdb -O svc svc_prod/,
      ],
      [
        pgError('42501', 'permission denied for schema public'),
        'forbidden',
        /permission denied .*GRANT ALL ON DATABASE svc_prod TO svc/,
      ],
      [pgError('57014', 'canceling statement due to statement timeout'), 'timeout', /statement_timeout_ms/],
      [
        pgError('54000', 'word is too long (2100 bytes, max 2046 bytes)'),
        'internal',
        /refused the data \(SQLSTATE 54000\): word is too long \(2100 bytes, max 2046 bytes\); retrying will not help/,
      ],
      [
        pgError('22021', 'invalid byte sequence for encoding "UTF8": 0x00'),
        'internal',
        /refused the data \(SQLSTATE 22021\): invalid byte sequence/,
      ],
      [
        pgError('XX000', `boom at ${url}`),
        'unavailable',
        /boom at postgres:\/\/svc:\*\*\*@db\.example:6543\/svc_prod/,
      ],
    ];
    for (const [error, code, message] of cases) {
      const mapped = storeError(error, context);
      expect(mapped.code, error.message).toBe(code);
      expect(mapped.message, error.message).toMatch(message);
      expect(mapped.message).toContain('PostgreSQL at db.example:6543 (database "svc_prod", user "svc"');
      expect(mapped.message).not.toContain('p4ssw0rd-x');
      expect(mapped.details).toMatchObject({ host: 'db.example', port: 6543, database: 'svc_prod' });
    }
    const own = new SvcError('conflict', 'mine');
    expect(storeError(own, context)).toBe(own);
  });
});
