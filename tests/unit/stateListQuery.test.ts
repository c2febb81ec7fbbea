import { parseListQuery } from '../../shared/adapters/state';

test('valid parameters become a store query', () => {
  const r = parseListQuery(
    new URLSearchParams('state=Running,Failed&tag=project=cfd&createdFrom=2026-01-01&createdTo=2026-02-01T00:00:00Z&top=25&continuationToken=abc'),
  );
  expect(r).toEqual({
    ok: true,
    query: {
      state: ['Running', 'Failed'],
      tag: { key: 'project', value: 'cfd' },
      createdFrom: '2026-01-01T00:00:00.000Z',
      createdTo: '2026-02-01T00:00:00.000Z',
      top: 25,
      continuationToken: 'abc',
    },
  });
  expect(parseListQuery({ state: 'Submitted', tag: 'vip' })).toEqual({ ok: true, query: { state: 'Submitted', tag: { key: 'vip' } } });
  expect(parseListQuery({})).toEqual({ ok: true, query: {} });
});

test('every bad parameter is reported by name', () => {
  const r = parseListQuery({ state: 'Running,Exploded', tag: 'bad key', createdFrom: 'yesterday', top: '5000' });
  expect(r.ok).toBe(false);
  if (!r.ok) expect(r.errors.map((e) => e.path).sort()).toEqual(['createdFrom', 'state', 'tag', 'top']);
});
