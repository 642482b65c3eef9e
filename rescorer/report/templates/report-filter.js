(function () {
  function show(box, verdict) {
    box.dataset.filter = verdict;
    box.querySelectorAll('button[data-show]').forEach(function (b) {
      b.setAttribute('aria-pressed', String(b.dataset.show === verdict));
    });
    var all = box.querySelectorAll('li.change').length;
    var n = verdict === 'all' ? all : box.querySelectorAll('li.change.' + verdict).length;
    box.querySelector('.shown').textContent = 'showing ' + n + ' of ' + all;
  }
  var start = (location.hash.match(/^#show=(\w+)$/) || [])[1] || 'all';
  document.querySelectorAll('.changes').forEach(function (box) {
    box.addEventListener('click', function (e) {
      var b = e.target.closest('button[data-show]');
      if (b) { show(box, b.dataset.show); }
    });
    show(box, box.querySelector('button[data-show="' + start + '"]') ? start : 'all');
  });
  document.documentElement.dataset.ready = 'yes';
})();
